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
// Errors belong to the encode stage and name the template's origin and,
// for syntax errors, the line and column.
//
// Imports: gguf, github.com/ardanlabs/jinja and the standard library.
package chat
