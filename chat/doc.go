// Package chat renders a conversation into the prompt text a chat model was
// trained on, using the model's own chat template: the Jinja2 program
// stored in the GGUF key tokenizer.chat_template (copied there from Hugging
// Face's tokenizer_config.json).
//
// Templates are run by github.com/ardanlabs/jinja with the environment
// Hugging Face transformers' apply_chat_template uses, which is what the
// reference runtimes imitate: trim_blocks and lstrip_blocks on, the
// globals raise_exception (fails the render with the template's message)
// and strftime_now (Python strftime; the clock is Template.Now), and the
// variables messages, add_generation_prompt, bos_token and eos_token.
// Outputs are checked byte for byte against Python's jinja2 for the real
// templates in testdata/templates (see testdata/README.md).
//
// A model without a template gets ChatML (Fallback), the same default
// llama.cpp applies, so a template-less model is prompted identically by
// both runtimes; it is never an error.
//
// A template comes from a model file, that is from anyone, and the engine
// has no limits: a loop doubling a string, a macro calling itself or a
// list holding itself would end the process. So New rewrites the template
// (bound.go, with a parser that mirrors the engine's grammar) into one that
// calls a per-render meter (meter.go) for every operation whose cost the
// source does not fix: operators, subscripts, slices, calls, methods,
// filters, outputs, loop iterations, macro bodies. The meter checks the
// size of each result before it is built, and the work, the recursion
// depth and the time, against Template.Limits; a render that would pass
// one fails with a *LimitError in the encode stage. Memory stays within a
// small multiple of Limits.MaxBuilt plus MaxOutput, and no render runs
// longer than MaxTime.
//
// Errors belong to the encode stage and name the template's origin and,
// for syntax errors, the line and column.
//
// Imports: gguf, github.com/ardanlabs/jinja and the standard library.
package chat
