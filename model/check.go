package model

import "fmt"

// CheckForward validates the arguments of Session.Forward and reports
// whether every position's logits are wanted. Its errors are infer-stage
// errors that carry the numbers.
func CheckForward(c *Config, o *SessionOptions, tokens []int, pos int, logits []float32) (all bool, err error) {
	if err := checkTokens(c, o, tokens, pos); err != nil {
		return false, err
	}
	n := len(tokens)
	switch len(logits) {
	case c.VocabSize:
		return n == 1, nil
	case n * c.VocabSize:
		return true, nil
	}
	return false, fmt.Errorf("infer: logits buffer holds %d floats, want %d (last token) or %d (%d tokens × vocab %d)",
		len(logits), c.VocabSize, n*c.VocabSize, n, c.VocabSize)
}

// checkTokens checks a forward pass's tokens and positions against the
// session's batch size, context and the vocabulary.
func checkTokens(c *Config, o *SessionOptions, tokens []int, pos int) error {
	n := len(tokens)
	switch {
	case n == 0:
		return fmt.Errorf("infer: no tokens to evaluate")
	case n > o.Batch:
		return fmt.Errorf("infer: %d tokens in one forward pass, the session's batch size is %d", n, o.Batch)
	case pos < 0 || pos+n > o.CtxLen:
		return fmt.Errorf("infer: positions %d..%d do not fit the context of %d tokens", pos, pos+n-1, o.CtxLen)
	}
	for i, id := range tokens {
		if id < 0 || id >= c.VocabSize {
			return fmt.Errorf("infer: token %d (at position %d) is outside the vocabulary of %d", id, pos+i, c.VocabSize)
		}
	}
	return nil
}
