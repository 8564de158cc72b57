package onnx

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
)

// externalDataLocations lists the external data files an ONNX model refers
// to: the "location" entries of every TensorProto stored outside the model
// (initializers, Constant node attributes, sparse tensors, subgraphs). They
// are what the fingerprint must hash besides model.onnx. It reads only the
// few protobuf fields on the way and rejects malformed input with an error.
func externalDataLocations(model []byte) ([]string, error) {
	var locs []string
	w := modelWalker{add: func(loc string) error {
		if loc == "" || strings.HasPrefix(loc, "/") || strings.Contains(loc, "\\") ||
			path.Clean(loc) != loc || loc == ".." || strings.HasPrefix(loc, "../") {
			return fmt.Errorf("onnx: external data location %q is not a file beside the model", loc)
		}
		if !slices.Contains(locs, loc) {
			locs = append(locs, loc)
		}
		return nil
	}}
	err := walkFields(model, func(f int, b []byte) error {
		if f == 7 { // ModelProto.graph
			return w.graph(b, 0)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("onnx: reading model: %w", err)
	}
	slices.Sort(locs)
	return locs, nil
}

// maxGraphDepth bounds subgraph nesting so hostile input cannot exhaust the stack.
const maxGraphDepth = 32

type modelWalker struct{ add func(string) error }

func (w modelWalker) graph(b []byte, depth int) error {
	if depth > maxGraphDepth {
		return errors.New("graphs nested too deep")
	}
	return walkFields(b, func(f int, b []byte) error {
		switch f {
		case 1: // GraphProto.node
			return w.node(b, depth)
		case 5: // initializer
			return w.tensor(b)
		case 15: // sparse_initializer
			return w.sparse(b)
		}
		return nil
	})
}

func (w modelWalker) node(b []byte, depth int) error {
	return walkFields(b, func(f int, b []byte) error {
		if f != 5 { // NodeProto.attribute
			return nil
		}
		return walkFields(b, func(f int, b []byte) error {
			switch f {
			case 5, 10: // AttributeProto.t, tensors
				return w.tensor(b)
			case 6, 11: // g, graphs
				return w.graph(b, depth+1)
			case 22, 23: // sparse_tensor, sparse_tensors
				return w.sparse(b)
			}
			return nil
		})
	})
}

func (w modelWalker) sparse(b []byte) error {
	return walkFields(b, func(f int, b []byte) error {
		if f == 1 || f == 2 { // SparseTensorProto.values, indices
			return w.tensor(b)
		}
		return nil
	})
}

func (w modelWalker) tensor(b []byte) error {
	return walkFields(b, func(f int, b []byte) error {
		if f != 13 { // TensorProto.external_data
			return nil
		}
		var key, value string
		err := walkFields(b, func(f int, b []byte) error {
			switch f {
			case 1:
				key = string(b)
			case 2:
				value = string(b)
			}
			return nil
		})
		if err != nil || key != "location" {
			return err
		}
		return w.add(value)
	})
}

// walkFields calls fn for each length-delimited field of the protobuf
// message b and skips the others.
func walkFields(b []byte, fn func(field int, data []byte) error) error {
	for len(b) > 0 {
		key, n := binary.Uvarint(b)
		if n <= 0 {
			return errors.New("bad field key")
		}
		b = b[n:]
		field := key >> 3
		if field == 0 || field > 1<<29 {
			return fmt.Errorf("bad field number %d", field)
		}
		switch key & 7 {
		case 0: // varint
			if _, n = binary.Uvarint(b); n <= 0 {
				return errors.New("bad varint")
			}
			b = b[n:]
		case 1: // 64-bit
			if len(b) < 8 {
				return errors.New("truncated fixed64")
			}
			b = b[8:]
		case 5: // 32-bit
			if len(b) < 4 {
				return errors.New("truncated fixed32")
			}
			b = b[4:]
		case 2: // length-delimited
			l, n := binary.Uvarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return errors.New("bad length")
			}
			data := b[n : n+int(l)]
			b = b[n+int(l):]
			if err := fn(int(field), data); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unsupported wire type %d", key&7)
		}
	}
	return nil
}
