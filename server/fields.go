package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
)

// Fields a request names that the server does not know. The native jobs
// API is glassbox's own: a field it does not know (another API's
// max_tokens, a sampling option at the top level, a misspelling) would
// run the job with defaults, so checkJobFields refuses it with a 400
// naming the field and the nearest known name. The compatible dialects
// keep their originals' leniency where the originals are lenient: Ollama's
// server decodes requests with encoding/json, which drops unknown fields,
// and its Options.FromMap skips an option it does not know with a logged
// warning ("invalid option provided"), as warnOptions does here; its
// Modelfile parser refuses a PARAMETER it does not know (api.FormatParams:
// "unknown parameter"), as ParseModelfile does. OpenAI's and Anthropic's
// clients send vendor extensions to compatible servers, which ignore them.

// jobFields are the top-level fields of POST /v1/jobs.
var jobFields = jsonFields(reflect.TypeFor[jobRequest]())

// jobAliases are other APIs' names for what a job takes, and where it
// takes them.
var jobAliases = map[string]string{
	"max_tokens": "options.num_predict", "max_completion_tokens": "options.num_predict",
	"max_output_tokens": "options.num_predict", "max_new_tokens": "options.num_predict", "n_predict": "options.num_predict",
	"n_ctx": "options.num_ctx", "context_length": "options.num_ctx", "stop_sequences": "options.stop",
}

// optionAliases are other APIs' names for options.
var optionAliases = map[string]string{
	"max_tokens": "num_predict", "max_completion_tokens": "num_predict", "max_output_tokens": "num_predict",
	"max_new_tokens": "num_predict", "n_predict": "num_predict", "n_ctx": "num_ctx", "ctx": "num_ctx",
	"context_length": "num_ctx", "stop_sequences": "stop", "threads": "num_thread", "n_threads": "num_thread",
	"repetition_penalty": "repeat_penalty",
}

// jsonFields are the JSON names of a struct type's fields, embedded
// structs' included.
func jsonFields(t reflect.Type) []string {
	var names []string
	for _, f := range reflect.VisibleFields(t) {
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "-" || !f.IsExported() && !f.Anonymous || f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct {
			continue
		}
		if tag == "" {
			tag = f.Name
		}
		names = append(names, tag)
	}
	return names
}

// checkJobFields refuses the fields of a POST /v1/jobs body (one JSON
// object, already decoded without error) that a job does not take, at the
// top and in options.
func checkJobFields(body []byte) *Error {
	var u unknowns
	for _, k := range objectKeys(body) {
		if slices.Contains(jobFields, k) {
			continue
		}
		switch {
		case isOllamaOption(k):
			u.add(k, k, didYouMean("options."+k))
		case jobAliases[k] != "":
			u.add(k, k, didYouMean(jobAliases[k]))
		default:
			u.add(k, k, didYouMean(nearestField(k)))
		}
	}
	var top struct {
		Options json.RawMessage `json:"options"`
	}
	json.Unmarshal(body, &top) // decoded once already: cannot fail
	for _, k := range objectKeys(top.Options) {
		if isOption(k) {
			continue
		}
		switch {
		case isOllamaOption(k):
			u.addOption(k, fmt.Sprintf("option %q is an Ollama option glassbox does not use", k))
		case optionAliases[k] != "":
			u.addOption(k, fmt.Sprintf("unknown option %q%s", k, didYouMean(optionAliases[k])))
		default:
			u.addOption(k, fmt.Sprintf("unknown option %q%s", k, didYouMean(nearest(k, optionNames))))
		}
	}
	return u.err()
}

// nearestField is the known name nearest to an unknown top-level one: a
// field, an option (as options.NAME) or another API's name.
func nearestField(k string) string {
	cands := slices.Clone(jobFields)
	for _, o := range optionNames {
		cands = append(cands, "options."+o)
	}
	for a := range jobAliases {
		cands = append(cands, a)
	}
	slices.Sort(cands[len(jobFields):]) // deterministic among equals
	bare := make([]string, len(cands))
	for i, c := range cands {
		bare[i] = strings.TrimPrefix(c, "options.")
	}
	n := nearest(k, bare)
	if n == "" {
		return ""
	}
	i := slices.Index(bare, n)
	if alias, ok := jobAliases[cands[i]]; ok {
		return alias
	}
	return cands[i]
}

// unknowns gathers the unknown fields of one request.
type unknowns struct {
	param   string   // the first one, as Error.Param
	fields  []string // top level: "name" (did you mean ...?)
	options []string // in options: whole sentences
	lost    bool     // a top-level one has no near name: list the known ones
}

func (u *unknowns) add(param, name, hint string) {
	if u.param == "" {
		u.param = param
	}
	u.fields = append(u.fields, fmt.Sprintf("%q%s", name, hint))
	u.lost = u.lost || hint == ""
}

func (u *unknowns) addOption(name, sentence string) {
	if u.param == "" {
		u.param = "options." + name
	}
	u.options = append(u.options, sentence)
}

func (u *unknowns) err() *Error {
	if u.param == "" {
		return nil
	}
	var parts []string
	switch len(u.fields) {
	case 0:
	case 1:
		parts = append(parts, "unknown field "+u.fields[0])
	default:
		parts = append(parts, "unknown fields "+strings.Join(u.fields, ", "))
	}
	parts = append(parts, u.options...)
	msg := strings.Join(parts, "; ")
	if u.lost {
		msg += "; known fields: " + strings.Join(jobFields, ", ")
	}
	return &Error{Status: http.StatusBadRequest, Stage: "deliver", Code: "unknown_field", Param: u.param, Message: msg,
		Hint: "the options (sampling, context, threads) go in \"options\", by Ollama's names; see docs/API.md"}
}

func didYouMean(name string) string {
	if name == "" {
		return ""
	}
	return " (did you mean " + name + "?)"
}

// objectKeys are the keys of a JSON object in the order written; nil for
// anything but an object.
func objectKeys(raw []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		k, ok := t.(string)
		if err != nil || !ok {
			return keys
		}
		keys = append(keys, k)
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return keys
		}
	}
	return keys
}

// nearest is the name in names nearest to s by edit distance (letter
// case ignored, a swap of neighbours one edit), if near enough to be a
// slip: one edit in a name of up to 7 letters, two up to 15, three
// beyond. The first of equals wins.
func nearest(s string, names []string) string {
	s = strings.ToLower(s)
	best, bestD := "", len(s)/8+2
	for _, n := range names {
		if d := editDistance(s, strings.ToLower(n)); d < bestD && d < len(n) {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and swaps of adjacent bytes.
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// warnOptions logs the options of an Ollama-dialect request that Ollama
// does not know, which are ignored as Ollama ignores them, with the
// nearest name; those of Ollama's that glassbox has no use for are
// logged at debug level.
func (s *Server) warnOptions(r *http.Request, options map[string]any) {
	var unknown, unused []string
	for _, k := range slices.Sorted(maps.Keys(options)) {
		switch {
		case isOption(k):
		case isOllamaOption(k):
			unused = append(unused, k)
		default:
			unknown = append(unknown, k+didYouMean(nearest(k, ollamaOptionNames)))
		}
	}
	if len(unknown) > 0 {
		s.log.Warn("options Ollama does not know are ignored, as Ollama ignores them", "path", r.URL.Path, "options", strings.Join(unknown, ", "))
	}
	if len(unused) > 0 {
		s.log.Log(r.Context(), slog.LevelDebug, "options glassbox has no use for are ignored", "path", r.URL.Path, "options", strings.Join(unused, ", "))
	}
}
