// Package engine is the text generation loop: prompt tokens → prefill in
// chunks of the session's batch size → token-by-token decoding over the KV
// cache → sampling → streamed text, with stop conditions (end-of-generation
// tokens, stop strings that never leak into the output, max tokens, the end
// of the context) reported as a stop reason that carries the numbers.
//
// Progress goes through the pipeline trace in the context (prefill tokens,
// generated tokens, each token's text); failures are *pipeline.Error values
// attributed to the encode (a prompt that does not fit), prefill or
// generate stage.
//
// Text (text.go) is the whole text path on top of it: load the file, build
// the tokenizer, apply the chat template, encode, generate; the CLI's run
// command uses it. A chat reply's thinking is split from its answer as it
// is released: a <think> block (think.go), or, for a template in OpenAI's
// harmony format (gpt-oss), the reply's channels, whose calls to
// functions.NAME come out as Result.ToolCalls (harmony.go). Batcher (batch.go) steps the generations of several
// callers together, one model.Step per token for all of them (decode rows
// and chunks of newly arrived prompts in the same pass), so parallel
// streams share the weight reads. Perplexity (perplexity.go)
// scores a text the way llama-perplexity does.
//
// Stages report the process's resident-memory high-water mark as they end
// (plan.PeakRSS), and the generate stage the caller's roofline figures
// (Request.Roofline, Limiter).
//
// Imports: model, pipeline, plan, sample, tokenizer, chat, gguf.
package engine
