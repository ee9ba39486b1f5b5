package chat

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/glassbox-ai/glassbox/gguf"
)

// GGUF metadata keys read by FromGGUF.
const (
	KeyTemplate = "tokenizer.chat_template"
	keyTokens   = "tokenizer.ggml.tokens"
	keyBOS      = "tokenizer.ggml.bos_token_id"
	keyEOS      = "tokenizer.ggml.eos_token_id"
)

// FallbackSource is the template used for a model without one: ChatML,
// the default llama.cpp applies to such models (its "chatml" template),
// so both runtimes build the same prompt. Every role is rendered as
// "<|im_start|>ROLE\nCONTENT<|im_end|>\n", and the generation prompt is
// "<|im_start|>assistant\n".
const FallbackSource = "{%- for message in messages -%}" +
	"{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' -}}" +
	"{%- endfor -%}" +
	"{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"

// Fallback returns the ChatML fallback template with the given token texts.
func Fallback(bos, eos string) Template {
	t, err := New(FallbackSource, "fallback (ChatML: the model has no "+KeyTemplate+")", bos, eos)
	if err != nil {
		panic("chat: the fallback template does not compile: " + err.Error()) // a broken invariant, not input
	}
	return t
}

// FromGGUF returns the model's chat template (tokenizer.chat_template)
// with the texts of its BOS and EOS tokens. A model without the key gets
// Fallback; a key of the wrong type or a template that does not compile is
// an error. Missing or out-of-range BOS/EOS ids give empty token texts.
func FromGGUF(f *gguf.File) (Template, error) {
	bos, eos := tokenText(f, keyBOS), tokenText(f, keyEOS)
	src, err := f.Meta.String(KeyTemplate)
	if errors.Is(err, gguf.ErrMissingKey) {
		return Fallback(bos, eos), nil
	}
	if err != nil {
		return Template{}, &Error{Origin: "gguf " + KeyTemplate, Op: "load", Err: err}
	}
	if src == "" {
		return Fallback(bos, eos), nil
	}
	return New(src, "gguf "+KeyTemplate, bos, eos)
}

// tokenText returns the text of the token whose id is stored at key, or ""
// (no key, the "none" id 0xFFFFFFFF, or an id outside the vocabulary).
func tokenText(f *gguf.File, key string) string {
	id, err := f.Meta.Int(key)
	if err != nil {
		return ""
	}
	toks, err := f.Meta.Strings(keyTokens)
	if err != nil || id < 0 || id >= int64(len(toks)) {
		return ""
	}
	return toks[id]
}

// Names lists the named variants a GGUF carries besides the default
// template (keys tokenizer.chat_template.NAME, e.g. "tool_use"), sorted.
func Names(f *gguf.File) []string {
	var names []string
	for _, kv := range f.Meta.KVs {
		if name, ok := strings.CutPrefix(kv.Key, KeyTemplate+"."); ok && name != "" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// FromGGUFNamed returns the variant tokenizer.chat_template.NAME; unlike
// FromGGUF there is no fallback, since asking for a variant the model does
// not have is a mistake worth reporting. An empty name means FromGGUF.
func FromGGUFNamed(f *gguf.File, name string) (Template, error) {
	if name == "" {
		return FromGGUF(f)
	}
	key := KeyTemplate + "." + name
	src, err := f.Meta.String(key)
	if err != nil {
		have := "none"
		if n := Names(f); len(n) > 0 {
			have = strings.Join(n, ", ")
		}
		return Template{}, &Error{Origin: "gguf " + key, Op: "load", Err: fmt.Errorf("%w (named templates in this model: %s)", err, have)}
	}
	return New(src, "gguf "+key, tokenText(f, keyBOS), tokenText(f, keyEOS))
}
