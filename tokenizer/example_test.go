package tokenizer_test

import (
	"fmt"
	"path/filepath"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/tokenizer"
)

func Example() {
	dir, err := shared.Dir()
	if err != nil {
		fmt.Println(err)
		return
	}
	f, err := gguf.Open(filepath.Join(dir, "models", "stories260K.gguf"))
	if err != nil {
		fmt.Println(err)
		return
	}
	tok, err := tokenizer.FromGGUF(f)
	f.Close() // the tokenizer keeps no reference to the file
	if err != nil {
		fmt.Println(err)
		return
	}
	ids, _ := tok.Encode("Once upon a time", true, false)
	fmt.Println(ids, tok.Model(), tok.VocabSize())
	fmt.Printf("%q\n", tok.Decode(ids))

	// Streaming: bytes of a character split across tokens are held back.
	d := tok.NewStreamDecoder()
	for _, id := range ids {
		fmt.Printf("%q ", d.Add(id))
	}
	fmt.Printf("%q %v\n", d.Flush(), tok.IsEOG(tok.EOS()))
	// Output:
	// [1 403 407 261 378] llama 512
	// "Once upon a time"
	// "" "Once" " upon" " a" " time" "" true
}
