package server

import "net/http"

// routes registers every endpoint (Go 1.22 ServeMux patterns).
func (s *Server) routes() {
	m := http.NewServeMux()
	// Native jobs API.
	m.HandleFunc("POST /v1/jobs", s.createJob)
	m.HandleFunc("GET /v1/jobs", s.listJobs)
	m.HandleFunc("GET /v1/jobs/{id}", s.getJob)
	m.HandleFunc("GET /v1/jobs/{id}/events", s.jobEvents)
	m.HandleFunc("POST /v1/jobs/{id}/cancel", s.cancelJob)
	m.HandleFunc("GET /v1/jobs/{id}/images/{n}", s.jobImage)
	m.HandleFunc("GET /v1/jobs/{id}/video", s.jobVideo)
	m.HandleFunc("POST /v1/plan", s.plan)
	m.HandleFunc("GET /v1/defaults", s.defaults)
	m.HandleFunc("GET /v1/ps", s.ps)
	m.HandleFunc("POST /v1/ps/{model}/load", s.loadModel)
	m.HandleFunc("POST /v1/ps/{model}/unload", s.unloadModel)
	m.HandleFunc("GET /v1/cluster/workers", s.clusterWorkers)
	m.HandleFunc("GET /healthz", s.healthz)
	if s.cfg.Metrics != nil {
		m.Handle("GET /metrics", s.cfg.Metrics)
	}
	// OpenAI (GET /v1/models is shared with the native API).
	m.HandleFunc("GET /v1/models", s.listModels)
	m.HandleFunc("GET /v1/models/{name...}", s.getModel)
	m.HandleFunc("POST /v1/chat/completions", s.openAIChat)
	m.HandleFunc("POST /v1/completions", s.openAICompletion)
	m.HandleFunc("POST /v1/embeddings", s.openAIEmbeddings)
	m.HandleFunc("POST /v1/images/generations", s.openAIImageGenerations)
	m.HandleFunc("POST /v1/images/edits", s.openAIImageEdits)
	m.HandleFunc("POST /v1/responses", s.openAIResponses)
	m.HandleFunc("GET /v1/responses/{id}", s.getResponse)
	m.HandleFunc("POST /v1/responses/{id}/cancel", s.cancelResponse)
	// AUTOMATIC1111.
	m.HandleFunc("POST /sdapi/v1/txt2img", s.a1111Txt2Img)
	m.HandleFunc("POST /sdapi/v1/img2img", s.a1111Img2Img)
	m.HandleFunc("GET /sdapi/v1/progress", s.a1111Progress)
	m.HandleFunc("POST /sdapi/v1/interrupt", s.a1111Interrupt)
	m.HandleFunc("GET /sdapi/v1/options", s.a1111Options)
	m.HandleFunc("POST /sdapi/v1/options", s.a1111SetOptions)
	m.HandleFunc("GET /sdapi/v1/sd-models", s.a1111SDModels)
	m.HandleFunc("GET /sdapi/v1/samplers", s.a1111SamplerList)
	m.HandleFunc("GET /sdapi/v1/schedulers", s.a1111SchedulerList)
	// ComfyUI, also under /api/.
	for _, pre := range []string{"", "/api"} {
		m.HandleFunc("POST "+pre+"/prompt", s.comfyPrompt)
		m.HandleFunc("GET "+pre+"/prompt", s.comfyPromptInfo)
		m.HandleFunc("GET "+pre+"/history", s.comfyHistory)
		m.HandleFunc("GET "+pre+"/history/{id}", s.comfyHistory)
		m.HandleFunc("GET "+pre+"/view", s.comfyView)
		m.HandleFunc("GET "+pre+"/queue", s.comfyQueue)
		m.HandleFunc("POST "+pre+"/interrupt", s.comfyInterrupt)
		m.HandleFunc("GET "+pre+"/object_info", s.comfyObjectInfo)
		m.HandleFunc("GET "+pre+"/object_info/{class}", s.comfyObjectInfo)
		m.HandleFunc("GET "+pre+"/system_stats", s.comfySystemStats)
		m.HandleFunc("GET "+pre+"/ws", s.comfyWS)
		m.HandleFunc("POST "+pre+"/upload/image", s.comfyUpload)
	}
	// Anthropic.
	m.HandleFunc("POST /v1/messages", s.anthropicMessages)
	m.HandleFunc("POST /v1/messages/count_tokens", s.anthropicCountTokens)
	// Ollama.
	m.HandleFunc("POST /completion", s.llamaCompletion) // llama-server's dialect
	m.HandleFunc("POST /completions", s.llamaCompletion)
	m.HandleFunc("POST /infill", s.llamaInfill)
	m.HandleFunc("POST /embedding", s.llamaEmbedding)
	m.HandleFunc("POST /embeddings", s.llamaEmbedding)
	m.HandleFunc("POST /tokenize", s.llamaTokenize)
	m.HandleFunc("POST /detokenize", s.llamaDetokenize)
	m.HandleFunc("POST /apply-template", s.llamaApplyTemplate)
	m.HandleFunc("GET /props", s.llamaProps)
	m.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})

	m.HandleFunc("POST /api/generate", s.ollamaGenerate)
	m.HandleFunc("POST /api/chat", s.ollamaChat)
	m.HandleFunc("POST /api/embed", s.ollamaEmbed)
	m.HandleFunc("POST /api/embeddings", s.ollamaEmbeddings)
	m.HandleFunc("POST /api/pull", s.ollamaPull)
	m.HandleFunc("DELETE /api/delete", s.ollamaDelete)
	m.HandleFunc("POST /api/copy", s.ollamaCopy)
	m.HandleFunc("POST /api/create", s.ollamaCreate)
	m.HandleFunc("HEAD /api/blobs/{digest}", s.ollamaBlob)
	m.HandleFunc("POST /api/blobs/{digest}", s.ollamaBlob)
	m.HandleFunc("GET /api/tags", s.ollamaTags)
	m.HandleFunc("POST /api/show", s.ollamaShow)
	m.HandleFunc("GET /api/ps", s.ollamaPS)
	m.HandleFunc("GET /api/version", s.ollamaVersion)
	m.HandleFunc("HEAD /{$}", func(w http.ResponseWriter, r *http.Request) {}) // Ollama's liveness probe
	if s.cfg.UI != nil {
		m.Handle("GET /{$}", s.cfg.UI)
		m.Handle("GET /ui/", s.cfg.UI)
	} else {
		m.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Write([]byte("glassbox is running\n"))
		})
	}
	// Everything else: a 404 or 405 in the endpoint's dialect.
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, &Error{Status: http.StatusNotFound, Stage: "deliver", Code: "not_found",
			Message: r.Method + " " + r.URL.Path + ": no such endpoint"})
	})
	s.mux = m
}
