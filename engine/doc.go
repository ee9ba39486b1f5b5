// Package engine is the text generation loop: prompt tokens → prefill in
// chunks of the session's batch size → token-by-token decoding over the KV
// cache → sampling → streamed text, with stop conditions (end-of-generation
// tokens, stop strings that never leak into the output, max tokens, the end
// of the context) reported as a stop reason that carries the numbers.
//
// Progress goes through the pipeline trace in the context (prefill tokens,
// generated tokens, each token's text); failures are *pipeline.Error values
// attributed to the prefill or generate stage.
//
// Imports: model, pipeline, sample.
package engine
