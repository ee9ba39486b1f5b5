package tensor

import "testing"

func TestDTypeTable(t *testing.T) {
	tests := []struct {
		dt          DType
		name        string
		block, size int
	}{
		{F32, "F32", 1, 4}, {F16, "F16", 1, 2}, {BF16, "BF16", 1, 2}, {F64, "F64", 1, 8},
		{I8, "I8", 1, 1}, {U8, "U8", 1, 1}, {I16, "I16", 1, 2}, {I32, "I32", 1, 4}, {I64, "I64", 1, 8},
		{Q4_0, "Q4_0", 32, 18}, {Q4_1, "Q4_1", 32, 20}, {Q5_0, "Q5_0", 32, 22}, {Q5_1, "Q5_1", 32, 24},
		{Q8_0, "Q8_0", 32, 34}, {Q8_1, "Q8_1", 32, 36},
		{Q2_K, "Q2_K", 256, 84}, {Q3_K, "Q3_K", 256, 110}, {Q4_K, "Q4_K", 256, 144},
		{Q5_K, "Q5_K", 256, 176}, {Q6_K, "Q6_K", 256, 210}, {Q8_K, "Q8_K", 256, 292},
		{IQ2_XXS, "IQ2_XXS", 256, 66}, {IQ2_XS, "IQ2_XS", 256, 74}, {IQ3_XXS, "IQ3_XXS", 256, 98},
		{IQ1_S, "IQ1_S", 256, 50}, {IQ4_NL, "IQ4_NL", 32, 18}, {IQ3_S, "IQ3_S", 256, 110},
		{IQ2_S, "IQ2_S", 256, 82}, {IQ4_XS, "IQ4_XS", 256, 136}, {IQ1_M, "IQ1_M", 256, 56},
		{TQ1_0, "TQ1_0", 256, 54}, {TQ2_0, "TQ2_0", 256, 66}, {MXFP4, "MXFP4", 32, 17},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.dt.String() != tc.name || tc.dt.BlockSize() != tc.block || tc.dt.TypeSize() != tc.size || !tc.dt.Known() {
				t.Fatalf("%d: %s block %d size %d", tc.dt, tc.dt, tc.dt.BlockSize(), tc.dt.TypeSize())
			}
			if p, ok := ParseDType(tc.name); !ok || p != tc.dt {
				t.Fatalf("ParseDType(%q) = %v, %v", tc.name, p, ok)
			}
			if n, err := tc.dt.RowBytes(int64(tc.block) * 3); err != nil || n != int64(tc.size)*3 {
				t.Fatalf("RowBytes = %d, %v", n, err)
			}
		})
	}
	if len(DTypes()) != len(tests) {
		t.Errorf("DTypes lists %d types, the table %d", len(DTypes()), len(tests))
	}
	for _, bad := range []DType{4, 5, 31, 62, 64, 1 << 31} {
		if bad.Known() || bad.BlockSize() != 0 || bad.String() == "" {
			t.Errorf("type %d claims to be known", bad)
		}
		if _, err := bad.RowBytes(32); err == nil {
			t.Errorf("RowBytes of unknown type %d succeeded", bad)
		}
	}
	for _, tc := range []struct {
		dt   DType
		want bool
	}{{F16, true}, {Q4_0, true}, {I8, true}, {U8, false}, {62, false}} {
		if tc.dt.InGGUF() != tc.want {
			t.Errorf("%s.InGGUF() = %v, want %v", tc.dt, !tc.want, tc.want)
		}
	}
	if _, err := Q4_0.RowBytes(33); err == nil {
		t.Error("RowBytes accepted 33 Q4_0 elements")
	}
}
