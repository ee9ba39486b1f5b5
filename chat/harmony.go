package chat

import "strings"

// IsHarmony reports whether a chat template writes OpenAI's harmony format
// (gpt-oss: https://cookbook.openai.com/articles/openai-harmony), whose
// replies come in channels (analysis, commentary, final) rather than with
// <think> tags; llama.cpp recognizes it by the same tag.
func IsHarmony(src string) bool { return strings.Contains(src, "<|channel|>") }

// HarmonyMessages adapts a conversation to a harmony template: such a
// template (gpt-oss's) raises an error for an assistant turn with tool
// calls that has both content and thinking, the one turn whose thinking
// it renders; the thinking is kept there and the content dropped, as
// llama.cpp does. msgs is not modified.
func HarmonyMessages(msgs []Message) []Message {
	var out []Message
	for i, m := range msgs {
		if m.Role == "assistant" && len(m.ToolCalls) > 0 && m.ReasoningContent != "" && m.Content != "" {
			if out == nil {
				out = append([]Message(nil), msgs...)
			}
			out[i].Content = ""
		}
	}
	if out == nil {
		return msgs
	}
	return out
}
