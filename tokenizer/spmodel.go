package tokenizer

import (
	"fmt"
	"unicode/utf8"
)

// SentencePiece's ModelProto (sentencepiece_model.proto, proto2): the
// fields a unigram encoder needs. Field numbers are the .proto's.

// spPieceType is ModelProto.SentencePiece.Type.
type spPieceType uint8

const (
	spNormal      spPieceType = 1
	spUnknown     spPieceType = 2
	spControl     spPieceType = 3
	spUserDefined spPieceType = 4
	spUnused      spPieceType = 5
	spByte        spPieceType = 6
)

// SentencePiece model types (TrainerSpec.ModelType).
const (
	spUnigram = 1
	spBPE     = 2
	spWord    = 3
	spChar    = 4
)

// Limits on a .model file.
const (
	maxSPModelBytes = 1 << 30
	maxSPPieces     = 1 << 23
)

type spPiece struct {
	text  string
	score float32
	typ   spPieceType
}

// spModel is a decoded ModelProto with proto2 defaults applied.
type spModel struct {
	pieces []spPiece

	// TrainerSpec
	modelType       int32
	byteFallback    bool
	treatWSAsSuffix bool
	unkID, bosID    int32
	eosID, padID    int32

	// NormalizerSpec
	normName         string
	charsmap         []byte
	addDummyPrefix   bool
	removeExtraSpace bool
	escapeSpace      bool
}

// parseSPModel decodes a serialized ModelProto.
func parseSPModel(b []byte) (*spModel, error) {
	if len(b) > maxSPModelBytes {
		return nil, fmt.Errorf("%w: %d bytes (limit %d)", errProto, len(b), maxSPModelBytes)
	}
	m := &spModel{
		modelType: spUnigram, unkID: 0, bosID: 1, eosID: 2, padID: -1,
		addDummyPrefix: true, removeExtraSpace: true, escapeSpace: true,
	}
	r := &protoReader{b: b}
	for !r.done() {
		field, wire, err := r.key()
		if err != nil {
			return nil, err
		}
		switch field {
		case 1:
			sub, err := r.sub(field, wire)
			if err != nil {
				return nil, err
			}
			if len(m.pieces) >= maxSPPieces {
				return nil, sub.fail("more than %d pieces", maxSPPieces)
			}
			p, err := parseSPPiece(sub, len(m.pieces))
			if err != nil {
				return nil, err
			}
			m.pieces = append(m.pieces, p)
		case 2:
			sub, err := r.sub(field, wire)
			if err != nil {
				return nil, err
			}
			if err := m.parseTrainer(sub); err != nil {
				return nil, err
			}
		case 3:
			sub, err := r.sub(field, wire)
			if err != nil {
				return nil, err
			}
			if err := m.parseNormalizer(sub); err != nil {
				return nil, err
			}
		default: // self_test_data, denormalizer_spec, unknown fields
			if err := r.skip(wire); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

func parseSPPiece(r *protoReader, index int) (spPiece, error) {
	p := spPiece{typ: spNormal}
	for !r.done() {
		field, wire, err := r.key()
		if err != nil {
			return p, err
		}
		switch field {
		case 1:
			s, _, err := r.readBytes(field, wire)
			if err != nil {
				return p, err
			}
			p.text = string(s)
		case 2:
			if p.score, err = r.readFloat(field, wire); err != nil {
				return p, err
			}
		case 3:
			v, err := r.readInt32(field, wire)
			if err != nil {
				return p, err
			}
			if v < 1 || v > 6 {
				return p, r.fail("piece %d has type %d (want 1..6)", index, v)
			}
			p.typ = spPieceType(v)
		default:
			if err := r.skip(wire); err != nil {
				return p, err
			}
		}
	}
	return p, nil
}

func (m *spModel) parseTrainer(r *protoReader) error {
	ints := map[int]*int32{3: &m.modelType, 40: &m.unkID, 41: &m.bosID, 42: &m.eosID, 43: &m.padID}
	flags := map[int]*bool{24: &m.treatWSAsSuffix, 35: &m.byteFallback}
	return r.fields(func(field, wire int) (bool, error) { return r.scalar(field, wire, ints, flags) })
}

func (m *spModel) parseNormalizer(r *protoReader) error {
	flags := map[int]*bool{3: &m.addDummyPrefix, 4: &m.removeExtraSpace, 5: &m.escapeSpace}
	return r.fields(func(field, wire int) (bool, error) {
		switch field {
		case 1:
			s, _, err := r.readBytes(field, wire)
			if err != nil {
				return true, err
			}
			if !utf8.Valid(s) {
				return true, r.fail("normalizer name is not UTF-8")
			}
			m.normName = string(s)
			return true, nil
		case 2:
			s, _, err := r.readBytes(field, wire)
			m.charsmap = s
			return true, err
		}
		return r.scalar(field, wire, nil, flags)
	})
}
