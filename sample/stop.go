package sample

import "strings"

// StopMatcher cuts a stream of text at the first occurrence of any stop
// string, so that no part of a stop string ever reaches the output, even
// when it arrives split across several tokens. It holds back the longest
// suffix of the pending text that could still begin a stop string, and
// releases it once it no longer can (or at Flush).
//
// If the input is valid UTF-8 and the stop strings are too, the emitted
// pieces are valid UTF-8: text is only held back from the start of a
// possible stop string, which starts on a character boundary.
//
// Use one matcher per generation; it is not safe for concurrent use.
type StopMatcher struct {
	stops   []string
	pending []byte
	stopped bool
	hit     string
}

// NewStopMatcher returns a matcher for stops. Empty strings are ignored; a
// matcher with no stop strings passes text through unchanged.
func NewStopMatcher(stops []string) *StopMatcher {
	m := &StopMatcher{}
	for _, s := range stops {
		if s != "" {
			m.stops = append(m.stops, s)
		}
	}
	return m
}

// Push adds text and returns what can safely be emitted. stopped is true
// once a stop string has been seen: emit is then the text before it, and
// every later Push returns ("", true). When several stop strings occur,
// the one that is complete first wins (the earliest end; of those ending
// together, the one that starts first): generation stops at the first
// moment a stop string has appeared, so the result does not depend on how
// the text was cut into pieces.
func (m *StopMatcher) Push(text string) (emit string, stopped bool) {
	if m.stopped {
		return "", true
	}
	if len(m.stops) == 0 {
		return text, false
	}
	m.pending = append(m.pending, text...)
	// Only a stop string that ends inside the new text can be new: search
	// from the earliest place such a match could start.
	from := max(0, len(m.pending)-len(text)-m.maxLen()+1)
	at, end, hit := -1, -1, ""
	for _, s := range m.stops {
		i := strings.Index(string(m.pending[from:]), s)
		if i < 0 {
			continue
		}
		if e := from + i + len(s); end < 0 || e < end || e == end && from+i < at {
			at, end, hit = from+i, e, s
		}
	}
	if at >= 0 {
		m.stopped, m.hit = true, hit
		emit = string(m.pending[:at])
		m.pending = m.pending[:0]
		return emit, true
	}
	keep := m.holdBack()
	emit = string(m.pending[:len(m.pending)-keep])
	m.pending = append(m.pending[:0], m.pending[len(m.pending)-keep:]...)
	return emit, false
}

// Flush returns the held-back text at the end of generation (for example
// when the token limit is reached while a possible stop prefix is pending).
// After a stop string was hit it returns "".
func (m *StopMatcher) Flush() string {
	if m.stopped {
		return ""
	}
	out := string(m.pending)
	m.pending = m.pending[:0]
	return out
}

// Stopped reports whether a stop string has been seen, and which.
func (m *StopMatcher) Stopped() (bool, string) { return m.stopped, m.hit }

// Pending returns the number of bytes currently held back.
func (m *StopMatcher) Pending() int { return len(m.pending) }

func (m *StopMatcher) maxLen() int {
	n := 0
	for _, s := range m.stops {
		n = max(n, len(s))
	}
	return n
}

// holdBack returns the length of the longest suffix of pending that is a
// proper prefix of some stop string.
func (m *StopMatcher) holdBack() int {
	best := 0
	for _, s := range m.stops {
		for k := min(len(s)-1, len(m.pending)); k > best; k-- {
			if string(m.pending[len(m.pending)-k:]) == s[:k] {
				best = k
				break
			}
		}
	}
	return best
}
