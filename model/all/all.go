// Package all registers every architecture glassbox implements with the
// model registry. Import it for its side effect:
//
//	import _ "github.com/glassbox-ai/glassbox/model/all"
package all

import (
	_ "github.com/glassbox-ai/glassbox/model/gemma"
	_ "github.com/glassbox-ai/glassbox/model/gptoss"
	_ "github.com/glassbox-ai/glassbox/model/granite"
	_ "github.com/glassbox-ai/glassbox/model/llama"
	_ "github.com/glassbox-ai/glassbox/model/phi3"
	_ "github.com/glassbox-ai/glassbox/model/qwen2"
	_ "github.com/glassbox-ai/glassbox/model/qwen3"
)
