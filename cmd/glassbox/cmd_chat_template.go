package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/glassbox-ai/glassbox/chat"
)

func init() {
	register(&command{name: "chat-template", summary: "render a conversation with a model's chat template (prints the prompt)", run: runChatTemplate})
}

func runChatTemplate(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "chat-template", "-m MODEL --messages FILE [--no-generation-prompt] [--vars JSON|FILE] [--template FILE | --template-name NAME]")
	model := fs.String("m", "", "model file path or store name (its tokenizer.chat_template and BOS/EOS texts)")
	msgFile := fs.String("messages", "", `JSON array of {"role", "content"} objects; "-" reads standard input`)
	noGen := fs.Bool("no-generation-prompt", false, "do not end with the assistant header (add_generation_prompt=false)")
	varsFile := fs.String("vars", "", `extra template variables: a JSON object, inline ('{"enable_thinking": false}') or a FILE holding one`)
	tmplFile := fs.String("template", "", "use this Jinja file instead of the model's template (-m then only supplies BOS/EOS)")
	tmplName := fs.String("template-name", "", "use the model's named variant tokenizer.chat_template.NAME (e.g. tool_use)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	usage := func(msg string) error {
		fmt.Fprintf(env.stderr, "glassbox chat-template: %s\n\n", msg)
		fs.Usage()
		return errUsage
	}
	switch {
	case len(pos) > 0:
		return usage(fmt.Sprintf("unexpected argument %q", pos[0]))
	case *msgFile == "":
		return usage("--messages is required")
	case *model == "" && *tmplFile == "":
		return usage("give -m MODEL or --template FILE")
	case *tmplName != "" && (*model == "" || *tmplFile != ""):
		return usage("--template-name picks a variant of the -m model's templates (not with --template)")
	}
	msgs, err := readMessages(env, *msgFile)
	if err != nil {
		return err
	}
	vars, err := readVars(env, *varsFile)
	if err != nil {
		return err
	}
	var tmpl chat.Template
	if *model != "" {
		f, err := openModel(*model)
		if err != nil {
			return err
		}
		defer f.Close()
		if tmpl, err = chat.FromGGUFNamed(f, *tmplName); err != nil {
			return err
		}
	}
	if *tmplFile != "" {
		src, err := os.ReadFile(*tmplFile)
		if err != nil {
			return fmt.Errorf("encode: --template: %w", err)
		}
		if tmpl, err = chat.New(string(src), *tmplFile, tmpl.BOS, tmpl.EOS); err != nil {
			return err
		}
	}
	out, err := tmpl.Render(msgs, !*noGen, vars)
	if err != nil {
		return err
	}
	_, err = io.WriteString(env.stdout, out)
	return err
}

// readInput reads a named file, or standard input for "-".
func readInput(env *cmdEnv, flagName, name string) ([]byte, error) {
	var b []byte
	var err error
	if name == "-" {
		b, err = io.ReadAll(env.stdin)
	} else {
		b, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, fmt.Errorf("encode: --%s: %w", flagName, err)
	}
	return b, nil
}

// readMessages parses a JSON array of messages: {role, content} plus the
// optional reasoning_content, tool_calls, tool_call_id and name. Unknown
// fields are refused rather than silently dropped.
func readMessages(env *cmdEnv, name string) ([]chat.Message, error) {
	b, err := readInput(env, "messages", name)
	if err != nil {
		return nil, err
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("encode: --messages %s: want a JSON array of {\"role\", \"content\"} objects: %w", name, err)
	}
	msgs := make([]chat.Message, len(raw))
	for i, r := range raw {
		bad := func(format string, a ...any) error {
			return fmt.Errorf("encode: --messages %s: message %d: %s", name, i, fmt.Sprintf(format, a...))
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(r, &fields); err != nil {
			return nil, bad("want an object: %v", err)
		}
		for _, key := range []string{"role", "content"} {
			v, ok := fields[key]
			switch {
			case !ok && key == "content" && fields["tool_calls"] != nil:
			case !ok:
				return nil, bad("%q is missing", key)
			case key == "content" && string(bytes.TrimSpace(v)) == "null":
				delete(fields, key) // OpenAI sends null content with tool calls
			default:
				var s string
				if json.Unmarshal(v, &s) != nil {
					return nil, bad("%q must be a string, got %s", key, abbrev(v))
				}
			}
		}
		clean, _ := json.Marshal(fields)
		dec := json.NewDecoder(bytes.NewReader(clean))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&msgs[i]); err != nil {
			return nil, bad("%v (supported: role, content, reasoning_content, tool_calls, tool_call_id, name)", err)
		}
	}
	return msgs, nil
}

// readVars parses a JSON object of template variables, keeping each value
// as raw JSON so that object key order survives into tojson.
func readVars(env *cmdEnv, name string) (map[string]any, error) {
	if name == "" {
		return nil, nil
	}
	var b []byte
	if trimmed := bytes.TrimSpace([]byte(name)); len(trimmed) > 0 && trimmed[0] == '{' {
		b, name = trimmed, "(inline)"
	} else {
		var err error
		if b, err = readInput(env, "vars", name); err != nil {
			return nil, err
		}
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("encode: --vars %s: want a JSON object: %w", name, err)
	}
	vars := make(map[string]any, len(raw))
	for k, v := range raw {
		vars[k] = v
	}
	return vars, nil
}

func abbrev(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}
