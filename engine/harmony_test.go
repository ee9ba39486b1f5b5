package engine

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/chat"
	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/model"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/sample"
)

// harmonyParts is what a harmony reply splits into.
type harmonyParts struct {
	think, answer string
	calls         []string // name(arguments)
}

// splitHarmony runs reply through a splitter in pieces of the given
// lengths (the rest in one piece when they run out).
func splitHarmony(open string, hide bool, reply string, cuts []int) harmonyParts {
	h := newHarmonySplitter(open, hide)
	var p harmonyParts
	rest := reply
	for _, n := range cuts {
		n = min(n, len(rest))
		th, an := h.push(rest[:n])
		p.think, p.answer, rest = p.think+th, p.answer+an, rest[n:]
	}
	th, an := h.push(rest)
	p.think, p.answer = p.think+th, p.answer+an
	th, an = h.flush()
	p.think, p.answer = p.think+th, p.answer+an
	for _, c := range h.toolCalls() {
		p.calls = append(p.calls, c.Function.Name+"("+string(c.Function.Arguments)+")")
	}
	return p
}

func (p harmonyParts) String() string {
	return "thinking " + strconv.Quote(p.think) + ", answer " + strconv.Quote(p.answer) + ", calls " + strings.Join(p.calls, " ")
}

// harmonyTagLeak reports a whole harmony tag in s.
func harmonyTagLeak(s string) string {
	for _, tag := range harmonyTags {
		if strings.Contains(s, tag) {
			return tag
		}
	}
	return ""
}

// TestHarmonySplitter: gpt-oss's replies split into thinking, answer and
// calls the same way at every cut into two pieces, byte by byte and at
// random cuts; no tag reaches the thinking or the answer.
func TestHarmonySplitter(t *testing.T) {
	const (
		think  = "<|channel|>analysis<|message|>User asks the weather. Use the tool.<|end|>"
		thinks = "User asks the weather. Use the tool."
	)
	for _, tc := range []struct {
		name        string
		open        string // the header of a message the prompt left open
		hide        bool
		reply       string
		think, answ string
		calls       []string
	}{
		{name: "thinking and answer", reply: think + "<|start|>assistant<|channel|>final<|message|>It is sunny in Paris.",
			think: thinks, answ: "It is sunny in Paris."},
		{name: "call, to= after the channel", reply: think + `<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}`,
			think: thinks, calls: []string{`get_weather({"city":"Paris"})`}},
		{name: "call, to= in the role header", reply: think + `<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"city":"Paris"}`,
			think: thinks, calls: []string{`get_weather({"city":"Paris"})`}},
		{name: "call as the first message", reply: ` to=functions.get_weather<|channel|>commentary<|constrain|>json<|message|>{"city":"Paris"}`,
			calls: []string{`get_weather({"city":"Paris"})`}},
		{name: "call on the analysis channel", reply: `<|channel|>analysis to=functions.now<|message|>`,
			calls: []string{`now({})`}},
		{name: "preamble, then a call", reply: think + "<|start|>assistant<|channel|>commentary<|message|>Let me look that up.<|end|>" +
			`<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Paris"}`,
			think: thinks, answ: "Let me look that up.", calls: []string{`get_weather({"city":"Paris"})`}},
		{name: "cut mid-analysis (token limit)", reply: "<|channel|>analysis<|message|>The user wants a poem about",
			think: "The user wants a poem about"},
		{name: "cut mid-header", reply: think + "<|start|>assistant<|channel|>fin", think: thinks},
		{name: "cut mid-arguments", reply: think + `<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Pa`,
			think: thinks},
		{name: "built-in tool dropped", reply: "<|channel|>analysis<|message|>Search.<|end|><|start|>assistant<|channel|>analysis to=browser.search code<|message|>{\"query\":\"x\"}",
			think: "Search."},
		{name: "stray commentary before analysis", reply: "<|channel|>commentary to=assistant<|channel|>analysis<|message|>Hm.<|end|><|start|>assistant<|channel|>final<|message|>Yes.",
			think: "Hm.", answ: "Yes."},
		{name: "two analysis messages", reply: "<|channel|>analysis<|message|>One.<|end|><|start|>assistant<|channel|>analysis<|message|>Two.<|end|><|start|>assistant<|channel|>final<|message|>Done.",
			think: "One.\nTwo.", answ: "Done."},
		{name: "<|return|> as text", reply: "<|channel|>final<|message|>Hi.<|return|>", answ: "Hi."},
		{name: "forgotten <|end|>", reply: "<|channel|>analysis<|message|>Hm.<|start|>assistant<|channel|>final<|message|>Yes.",
			think: "Hm.", answ: "Yes."},
		{name: "forgotten <|end|> and <|start|>", reply: "<|channel|>analysis<|message|>Hm.<|channel|>final<|message|>Yes.",
			think: "Hm.", answ: "Yes."},
		{name: "message without a channel", reply: "<|message|>Hi.", answ: "Hi."},
		{name: "whitespace between messages", reply: "<|channel|>analysis<|message|>a<|end|>\n<|start|>assistant<|channel|>final<|message|> b ",
			think: "a", answ: " b "},
		{name: "another role's message dropped", reply: think + "<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>\"sunny\"<|end|>" +
			"<|start|>assistant<|channel|>final<|message|>Sunny.", think: thinks, answ: "Sunny."},
		{name: "stray tags in a body", reply: "<|channel|>final<|message|>a<|message|>b<|constrain|>c", answ: "abc"},
		{name: "outside the format", reply: "Hello there.", answ: "Hello there."},
		{name: "outside the format, long", reply: strings.Repeat("word ", 60) + "<|end|>", answ: strings.Repeat("word ", 60)},
		{name: "thinking hidden", hide: true, reply: think + "<|start|>assistant<|channel|>final<|message|>Sunny.", answ: "Sunny."},
		{name: "the prompt opened the analysis", open: "<|start|>assistant<|channel|>analysis",
			reply: "more thought<|end|><|start|>assistant<|channel|>final<|message|>Done.", think: "more thought", answ: "Done."},
		{name: "the prompt opened the final message", open: "<|start|>assistant<|channel|>final", reply: " and more.", answ: " and more."},
		{name: "two calls", reply: `<|channel|>commentary to=functions.a<|message|>{"x": [1, 2]}<|end|><|start|>assistant to=functions.b<|channel|>commentary<|message|> {} `,
			calls: []string{`a({"x":[1,2]})`, `b({})`}},
		{name: "arguments that are not an object", reply: `<|channel|>commentary to=functions.a<|message|>[1]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := harmonyParts{tc.think, tc.answ, tc.calls}
			check := func(how string, cuts []int) {
				t.Helper()
				got := splitHarmony(tc.open, tc.hide, tc.reply, cuts)
				if got.think != want.think || got.answer != want.answer || !slices.Equal(got.calls, want.calls) {
					t.Fatalf("%s: %v\nwant %v", how, got, want)
				}
				if tag := harmonyTagLeak(got.think + got.answer); tag != "" {
					t.Fatalf("%s: %s leaked: %v", how, tag, got)
				}
			}
			check("whole", nil)
			for i := 1; i < len(tc.reply); i++ {
				check("cut at "+strconv.Itoa(i), []int{i})
			}
			ones := make([]int, len(tc.reply))
			for i := range ones {
				ones[i] = 1
			}
			check("byte by byte", ones)
			rng := rand.New(rand.NewPCG(2, uint64(len(tc.reply))))
			for range 20 {
				var cuts []int
				for n := 0; n < len(tc.reply); {
					k := 1 + rng.IntN(12)
					cuts, n = append(cuts, k), n+k
				}
				check(fmt.Sprint("random cuts ", cuts), cuts)
			}
		})
	}
}

// TestHarmonyHeader: the role, channel and recipient of headers as
// gpt-oss writes them.
func TestHarmonyHeader(t *testing.T) {
	for _, tc := range []struct {
		hdr, role, channel, to string
	}{
		{"<|channel|>analysis", "", "analysis", ""},
		{"<|start|>assistant<|channel|>final", "assistant", "final", ""},
		{"<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json", "assistant", "commentary", "functions.get_weather"},
		{"<|start|>assistant to=functions.get_weather<|channel|>commentary json", "assistant", "commentary", "functions.get_weather"},
		{" to=functions.f<|channel|>commentary<|constrain|>json", "", "commentary", "functions.f"},
		{"<|channel|>commentary to=functions.f<|constrain|>json", "", "commentary", "functions.f"},
		{"<|channel|>commentary to=assistant<|channel|>analysis", "", "analysis", ""},
		{"<|start|>functions.get_weather to=assistant<|channel|>commentary", "functions.get_weather", "commentary", ""},
		{"", "", "", ""},
	} {
		role, channel, to := parseHarmonyHeader(tc.hdr)
		if role != tc.role || channel != tc.channel || to != tc.to {
			t.Errorf("%q: role %q, channel %q, recipient %q; want %q, %q, %q", tc.hdr, role, channel, to, tc.role, tc.channel, tc.to)
		}
	}
	for _, tc := range []struct{ prompt, open string }{
		{"<|start|>user<|message|>Hi<|end|><|start|>assistant", ""},
		{"<|start|>user<|message|>Hi<|end|><|start|>assistant<|channel|>analysis<|message|>Hm", "<|start|>assistant<|channel|>analysis"},
		{"<|start|>assistant<|channel|>final<|message|>Hi<|end|>", ""},
		{"plain", ""},
	} {
		if got := harmonyOpenHeader(tc.prompt); got != tc.open {
			t.Errorf("harmonyOpenHeader(%q) = %q, want %q", tc.prompt, got, tc.open)
		}
	}
}

// FuzzHarmonySplitter: however a reply is cut into pieces, it splits as
// the whole reply does, no tag reaches the thinking or the answer, and
// nothing comes out that was not in (but the newlines joining messages).
func FuzzHarmonySplitter(f *testing.F) {
	for _, s := range []string{
		"<|channel|>analysis<|message|>a<|end|><|start|>assistant<|channel|>final<|message|>b",
		"<|channel|>commentary to=functions.f <|constrain|>json<|message|>{\"x\":1}",
		"<|start|>assistant to=functions.f<|channel|>commentary<|message|>{}<|end|><|chan",
		"plain <|en", "<|message|><|message|>", "<|channel|>final<|message|>x<|channel|>final<|message|>y",
	} {
		f.Add(s, uint8(3), false)
		f.Add(s, uint8(1), true)
	}
	f.Fuzz(func(t *testing.T, reply string, cut uint8, hide bool) {
		whole := splitHarmony("", hide, reply, nil)
		n := int(cut%9) + 1
		cuts := make([]int, len(reply)/n+1)
		for i := range cuts {
			cuts[i] = n
		}
		got := splitHarmony("", hide, reply, cuts)
		if got.think != whole.think || got.answer != whole.answer || !slices.Equal(got.calls, whole.calls) {
			t.Fatalf("%q in pieces of %d: %v; whole: %v", reply, n, got, whole)
		}
		if tag := harmonyTagLeak(got.think + got.answer); tag != "" {
			t.Fatalf("%q: %s leaked: %v", reply, tag, got)
		}
		if len(strings.ReplaceAll(got.think+got.answer, "\n", "")) > len(reply) {
			t.Fatalf("%q: more out than in: %v", reply, got)
		}
	})
}

// TestHarmonyFirst: with a format, a harmony model's headers and analysis
// are free and its final message constrained; a call is never constrained.
func TestHarmonyFirst(t *testing.T) {
	pieces := []string{"<|channel|>", "analysis", "final", "<|message|>", "<|end|>", "<|start|>", "assistant", "hm", "{", "}", "\n", ""} // 11: end of generation
	v := sample.NewVocab(len(pieces), func(id int) string { return pieces[id] }, func(id int) bool { return id == 11 })
	id := func(p string) int { return slices.Index(pieces, p) }
	free := `"<|channel|>" "analysis" "final" "<|message|>" "<|end|>" "<|start|>" "assistant" "hm" "{" "}" "\n" ""`
	allowed := func(c *harmonyFirst) string {
		logits := make([]float32, len(pieces))
		if !c.Mask(logits) {
			return "none"
		}
		var s []string
		for i, l := range logits {
			if !math.IsInf(float64(l), -1) {
				s = append(s, strconv.Quote(pieces[i]))
			}
		}
		return strings.Join(s, " ")
	}
	for _, tc := range []struct {
		name  string
		open  string
		reply []string
		want  []string // before each pick, and at the end
	}{
		{"analysis, then final", "", []string{"<|channel|>", "analysis", "<|message|>", "hm", "<|end|>", "<|start|>", "assistant", "<|channel|>", "final", "<|message|>", "{", "}"},
			[]string{free, free, free, free, free, free, free, free, free, free, `"{" "\n"`, `"}" "\n"`, `""`}},
		{"the prompt opened the final message", "<|start|>assistant<|channel|>final", []string{"{"}, []string{`"{" "\n"`, `"}" "\n"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newHarmonyFirst(sample.ObjectSchema().Constraint(v), func(i int) string { return pieces[i] }, tc.open)
			for i, p := range tc.reply {
				if got := allowed(c); got != tc.want[i] {
					t.Fatalf("before %q (pick %d): allowed %s, want %s", p, i, got, tc.want[i])
				}
				c.Accept(id(p))
			}
			if got := allowed(c); got != tc.want[len(tc.reply)] {
				t.Errorf("at the end: allowed %s, want %s", got, tc.want[len(tc.reply)])
			}
		})
	}
}

// TestHarmonyMessages: a harmony template gets an assistant turn's
// thinking under the name it reads, and a turn with calls, thinking and
// content keeps its thinking (gpt-oss's template refuses both).
func TestHarmonyMessages(t *testing.T) {
	msgs := []chat.Message{{Role: "user", Content: "Weather?"},
		{Role: "assistant", Content: "Let me look.", ReasoningContent: "Use the tool.",
			ToolCalls: []chat.ToolCall{{ID: "c0", Type: "function", Function: chat.ToolFunction{Name: "get_weather", Arguments: []byte(`{"city":"Paris"}`)}}}},
		{Role: "tool", Content: "sunny", ToolCallID: "c0"}}
	got := chat.HarmonyMessages(msgs)
	if got[1].Content != "" || got[1].ReasoningContent != "Use the tool." || msgs[1].Content != "Let me look." {
		t.Errorf("adapted %+v (the input became %+v)", got[1], msgs[1])
	}
	out, err := chat.Render(testHarmonyTemplate, got, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "<|start|>system<|message|>Reasoning: medium<|end|><|start|>user<|message|>Weather?<|end|>" +
		"<|start|>assistant<|channel|>analysis<|message|>Use the tool.<|end|>" +
		`<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Paris"}<|call|>` +
		"<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>\"sunny\"<|end|><|start|>assistant"
	if out != want {
		t.Errorf("rendered\n%s\nwant\n%s", out, want)
	}
}

// testHarmonyTemplate is a small template in gpt-oss's manner: the
// system message says the reasoning effort, an assistant turn with a call
// renders its thinking (message.thinking) and the call, a tool turn its
// output to the assistant.
const testHarmonyTemplate = `<|start|>system<|message|>Reasoning: {{ reasoning_effort | default("medium") }}<|end|>` +
	`{%- for message in messages -%}` +
	`{%- if message.role == "assistant" and message.tool_calls -%}` +
	`{%- if message.content and message.thinking -%}{{ raise_exception("Cannot pass both content and thinking") }}{%- endif -%}` +
	`{%- if message.thinking -%}<|start|>assistant<|channel|>analysis<|message|>{{ message.thinking }}<|end|>{%- endif -%}` +
	`{%- set call = message.tool_calls[0].function -%}` +
	`<|start|>assistant to=functions.{{ call.name }}<|channel|>commentary json<|message|>{{ call.arguments | tojson }}<|call|>` +
	`{%- elif message.role == "assistant" -%}<|start|>assistant<|channel|>final<|message|>{{ message.content }}<|end|>` +
	`{%- elif message.role == "tool" -%}<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>{{ message.content | tojson }}<|end|>` +
	`{%- else -%}<|start|>{{ message.role }}<|message|>{{ message.content }}<|end|>{%- endif -%}` +
	`{%- endfor -%}{%- if add_generation_prompt -%}<|start|>assistant{%- endif -%}`

// harmonyVocabTags are the tokens TestHarmonyText's vocabulary gets, at
// ids 400, 401, …
var harmonyVocabTags = []string{harmonyStart, harmonyChannel, harmonyMessage, harmonyConstrain, harmonyEnd, harmonyReturn, harmonyCall}

// harmonyText is stories260K with the harmony tags in its vocabulary (in
// place of seven ordinary pieces) and testHarmonyTemplate as its chat
// template: a real model and tokenizer that read and write gpt-oss's
// format, whose replies a test scripts.
func harmonyText(t *testing.T) *Text {
	t.Helper()
	path := shared.WithTokensSet(t, shared.Path(t, "models/stories260K.gguf"), "harmony",
		map[string]any{"tokenizer.chat_template": testHarmonyTemplate}, 400, harmonyVocabTags...)
	tx, err := LoadText(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Close() })
	return tx
}

// harmonyIDs spells a reply in tokens: each tag its token, every other
// byte its byte token (<0xNN> is id 3+NN in this vocabulary).
func harmonyIDs(reply string) []int {
	var ids []int
	for reply != "" {
		i, tag := harmonyTag(reply)
		if i < 0 {
			i = len(reply)
		}
		for _, b := range []byte(reply[:i]) {
			ids = append(ids, 3+int(b))
		}
		reply = reply[i:]
		if tag != "" && reply != "" {
			ids = append(ids, 400+slices.Index(harmonyVocabTags, tag))
			reply = reply[len(tag):]
		}
	}
	return ids
}

// scripted is a Sampler that picks the given tokens in turn, whatever the
// logits say.
type scripted struct{ ids []int }

func (s *scripted) Sample([]float32, []int) int {
	id := s.ids[0]
	s.ids = s.ids[1:]
	return id
}

// TestHarmonyText: a harmony model end to end but for its choices — the
// chat template (thinking of earlier turns, reasoning effort), the real
// tokenizer (the tags are special tokens: <|return|> and <|call|> end
// generation, the others are released as text), the model's passes, and
// the reply split into thinking, answer and calls on the token events and
// in the result, with no tag in either. The picks are scripted: no tiny
// model writes gpt-oss's format.
func TestHarmonyText(t *testing.T) {
	tx := harmonyText(t)
	tok, err := tx.Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	if !tok.IsEOG(405) || !tok.IsEOG(406) || tok.IsEOG(404) {
		t.Fatalf("end of generation: <|return|> %v, <|call|> %v, <|end|> %v; want true, true, false", tok.IsEOG(405), tok.IsEOG(406), tok.IsEOG(404))
	}
	const (
		analysis = "<|channel|>analysis<|message|>The user asks the weather.<|end|>"
		final    = "<|start|>assistant<|channel|>final<|message|>It is sunny."
		call     = `<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}`
	)
	off, on := false, true
	history := []chat.Message{{Role: "user", Content: "Weather in Paris?"},
		{Role: "assistant", Content: "Checking.", ReasoningContent: "Use the tool.",
			ToolCalls: []chat.ToolCall{{ID: "c0", Type: "function", Function: chat.ToolFunction{Name: "get_weather", Arguments: []byte(`{"city":"Paris"}`)}}}},
		{Role: "tool", Content: "sunny", ToolCallID: "c0"}}
	for _, tc := range []struct {
		name      string
		req       TextRequest
		reply     string
		prompt    string // the rendered prompt holds it
		think     string
		answer    string
		calls     string
		stop      string
		maxTokens int
	}{
		{name: "thinking and answer", reply: analysis + final + "<|return|>", prompt: "Reasoning: medium",
			think: "The user asks the weather.", answer: "It is sunny.", stop: StopEOG},
		{name: "tool call", reply: analysis + call + "<|call|>",
			think: "The user asks the weather.", calls: `get_weather {"city":"Paris"}`, stop: StopEOG},
		{name: "think false", req: TextRequest{Think: &off}, reply: analysis + final + "<|return|>", prompt: "Reasoning: low",
			answer: "It is sunny.", stop: StopEOG},
		{name: "effort high", req: TextRequest{Think: &on, Effort: "high"}, reply: analysis + final + "<|return|>", prompt: "Reasoning: high",
			think: "The user asks the weather.", answer: "It is sunny.", stop: StopEOG},
		{name: "cut mid-analysis", reply: analysis + final + "<|return|>", maxTokens: len(harmonyIDs("<|channel|>analysis<|message|>The user")),
			think: "The user", stop: StopLength},
		{name: "history", req: TextRequest{Messages: history}, reply: analysis + final + "<|return|>",
			prompt: "<|start|>assistant<|channel|>analysis<|message|>Use the tool.<|end|><|start|>assistant to=functions.get_weather",
			think:  "The user asks the weather.", answer: "It is sunny.", stop: StopEOG},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.req
			if req.Messages == nil {
				req.Messages = []chat.Message{{Role: "user", Content: "Weather in Paris?"}}
			}
			req.SplitThinking, req.MaxTokens, req.Session = true, tc.maxTokens, model.SessionOptions{CtxLen: 512}
			prompt, _, err := RenderPrompt(tx.File, &req)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(prompt, tc.prompt) || !strings.HasSuffix(prompt, "<|start|>assistant") {
				t.Fatalf("prompt %q: want %q in it, and the generation prompt at its end", prompt, tc.prompt)
			}
			var events []api.Token
			ctx := pipeline.WithTrace(context.Background(), &pipeline.Trace{Token: func(tok api.Token) { events = append(events, tok) }})
			r, err := tx.Prepare(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			r.Sampler = &scripted{harmonyIDs(tc.reply)}
			s, err := tx.Model.NewSession(req.Session)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			res, err := Generate(ctx, s, tx.Model.Config().VocabSize, r)
			if err != nil {
				t.Fatal(err)
			}
			var calls []string
			for _, c := range res.ToolCalls {
				calls = append(calls, c.Function.Name+" "+string(c.Function.Arguments))
			}
			if res.Thinking != tc.think || res.Text != tc.answer || strings.Join(calls, "; ") != tc.calls || res.StopReason != tc.stop {
				t.Errorf("thinking %q, answer %q, calls %q, stop %s; want %q, %q, %q, %s",
					res.Thinking, res.Text, calls, res.StopReason, tc.think, tc.answer, tc.calls, tc.stop)
			}
			var think, answer strings.Builder
			for _, e := range events {
				think.WriteString(e.Thinking)
				answer.WriteString(e.Text)
			}
			if think.String() != res.Thinking || answer.String() != res.Text {
				t.Errorf("token events: thinking %q, answer %q; the result's %q, %q", think.String(), answer.String(), res.Thinking, res.Text)
			}
			if tag := harmonyTagLeak(think.String() + answer.String()); tag != "" {
				t.Errorf("%s leaked", tag)
			}
		})
	}
	// With a format, the constraint waits for the final message.
	r, err := tx.Prepare(context.Background(), TextRequest{Messages: []chat.Message{{Role: "user", Content: "Hi"}}, SplitThinking: true, Format: "json"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Constraint.(*harmonyFirst); !ok || !r.Harmony {
		t.Errorf("constraint %T, harmony %v: want the format to wait for the final message", r.Constraint, r.Harmony)
	}
}
