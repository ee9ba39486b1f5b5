package web_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/glassbox-ai/glassbox/web"
)

// The UI is one handler: mount it at "/" next to the API routes (glassbox
// serve does this through server.Config.UI).
func ExampleHandler() {
	mux := http.NewServeMux()
	mux.Handle("GET /", web.Handler(web.Config{Profiles: []string{"pi5-8g"}}))

	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", "/ui/config.json", nil))
	fmt.Println(rec.Code, rec.Body.String())
	// Output: 200 {"profiles":["pi5-8g"]}
}
