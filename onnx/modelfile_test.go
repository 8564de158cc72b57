package onnx

import (
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// pb builds protobuf bytes: field(n, data) for length-delimited fields.
func field(n int, data ...[]byte) []byte {
	var payload []byte
	for _, d := range data {
		payload = append(payload, d...)
	}
	b := binary.AppendUvarint(nil, uint64(n)<<3|2)
	b = binary.AppendUvarint(b, uint64(len(payload)))
	return append(b, payload...)
}

func extTensor(loc string) []byte {
	return field(13, field(1, []byte("location")), field(2, []byte(loc)))
}

func TestExternalDataLocations(t *testing.T) {
	b, err := os.ReadFile(tinyModel(t, "tiny"))
	if err != nil {
		t.Fatal(err)
	}
	locs, err := externalDataLocations(b)
	if err != nil || !slices.Equal(locs, []string{"model.onnx_data"}) {
		t.Fatalf("tiny model: %v, %v", locs, err)
	}
	// BGE-M3's layout: initializers in model.onnx_data, a Constant node's
	// value apart, plus a subgraph and a sparse initializer; a varint and
	// fixed fields on the way must be skipped.
	varint := []byte{1 << 3, 0x96, 0x01}
	fixed := append([]byte{2<<3 | 1}, make([]byte, 8)...)
	model := slices.Concat(varint, field(7,
		field(5, extTensor("model.onnx_data")),
		field(5, extTensor("model.onnx_data")),
		field(1, field(5, field(5, extTensor("Constant_7_attr__value")))),
		field(1, field(5, field(6, field(5, extTensor("sub/weights.bin"))))),
		field(15, field(1, extTensor("sparse.bin"))),
		fixed,
	))
	locs, err = externalDataLocations(model)
	want := []string{"Constant_7_attr__value", "model.onnx_data", "sparse.bin", "sub/weights.bin"}
	if err != nil || !slices.Equal(locs, want) {
		t.Fatalf("got %v, %v; want %v", locs, err, want)
	}
	for name, bad := range map[string][]byte{
		"escaping location": field(7, field(5, extTensor("../../etc/passwd"))),
		"absolute location": field(7, field(5, extTensor("/etc/passwd"))),
		"truncated":         model[:len(model)-3],
		"bad length":        {7<<3 | 2, 0xff, 0x01},
		"group wire type":   {7<<3 | 3},
		"field zero":        {0x02, 0x00},
	} {
		if _, err := externalDataLocations(bad); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	deep := extTensor("x")
	for range maxGraphDepth + 2 {
		deep = field(1, field(5, field(6, deep)))
	}
	if _, err := externalDataLocations(field(7, deep)); err == nil {
		t.Error("deep nesting: no error")
	}
}

func TestGraphIO(t *testing.T) {
	for model, want := range map[string][2]string{
		"tiny":       {"input_ids/7/2 attention_mask/7/2", "last_hidden_state/1/3"},
		"tiny-dense": {"input_ids/7/2 attention_mask/7/2 token_type_ids/7/2", "sentence_embedding/1/2"},
	} {
		b, err := os.ReadFile(tinyModel(t, model))
		if err != nil {
			t.Fatal(err)
		}
		ins, outs, err := graphIO(b)
		if err != nil {
			t.Fatal(err)
		}
		str := func(vs []valueInfo) string {
			var parts []string
			for _, v := range vs {
				parts = append(parts, fmt.Sprintf("%s/%d/%d", v.name, v.elemType, v.rank))
			}
			return strings.Join(parts, " ")
		}
		if str(ins) != want[0] || str(outs) != want[1] {
			t.Errorf("%s: inputs %q outputs %q, want %q %q", model, str(ins), str(outs), want[0], want[1])
		}
	}
	// Old IR versions list initializers among the inputs: they are dropped.
	tensor := func(name string) []byte { return field(8, []byte(name)) }
	vi := func(name string) []byte {
		return field(1, []byte(name))
	}
	ins, _, err := graphIO(field(7, field(5, tensor("w")), field(11, vi("input_ids")), field(11, vi("w"))))
	if err != nil || len(ins) != 1 || ins[0].name != "input_ids" {
		t.Errorf("initializer inputs: %+v, %v", ins, err)
	}
	if _, _, err := graphIO([]byte{}); err == nil {
		t.Error("no graph: no error")
	}
}

func FuzzModelFile(f *testing.F) {
	if b, err := os.ReadFile(tinyModel(f, "tiny")); err == nil {
		f.Add(b)
	}
	if b, err := os.ReadFile(tinyModel(f, "tiny-dense")); err == nil {
		f.Add(b)
	}
	f.Add(field(7, field(1, field(5, field(5, extTensor("c"))))))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		graphIO(b) // must not panic
		locs, err := externalDataLocations(b)
		if err != nil {
			return
		}
		for _, l := range locs {
			if l == "" || l[0] == '/' {
				t.Fatalf("accepted location %q", l)
			}
		}
	})
}
