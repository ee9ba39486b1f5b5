// Package imageio reads and writes the images glassbox delivers: PNG files
// carrying text metadata, and conversions between image.Image and the
// planar float32 layout models use.
//
// PNG text chunks follow the PNG specification (W3C, third edition, §11.3.3):
// tEXt holds a Latin-1 keyword and Latin-1 text; iTXt holds UTF-8 text with
// an optional language tag. Encode writes each entry as tEXt when its text
// is Latin-1 without NUL, iTXt otherwise, placed after IHDR and before the
// image data, so tools that stop reading at IDAT still find it. The
// "parameters" key is where other image tools (the A1111/Forge web UIs,
// ComfyUI's readers) put generation settings; glassbox adds a JSON record
// of the job under "glassbox".
//
// Imports: standard library only.
package imageio
