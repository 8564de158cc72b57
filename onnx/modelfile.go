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
	return walkAll(b, func(field int, _ uint64, data []byte) error {
		if data == nil {
			return nil
		}
		return fn(field, data)
	})
}

// walkAll calls fn for each varint field (with its value, data nil) and each
// length-delimited field (data non-nil) of the protobuf message b.
func walkAll(b []byte, fn func(field int, v uint64, data []byte) error) error {
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
			v, n := binary.Uvarint(b)
			if n <= 0 {
				return errors.New("bad varint")
			}
			b = b[n:]
			if err := fn(int(field), v, nil); err != nil {
				return err
			}
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
			data := b[n : n+int(l) : n+int(l)]
			b = b[n+int(l):]
			if err := fn(int(field), 0, data); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unsupported wire type %d", key&7)
		}
	}
	return nil
}

// ONNX TensorProto.DataType values the embedder deals with.
const (
	onnxFloat = 1
	onnxInt64 = 7
)

// valueInfo is a graph input or output: its name, element type and rank.
type valueInfo struct {
	name     string
	elemType int
	rank     int
}

// graphIO reads the model's graph inputs (initializers excluded, which
// old IR versions also list as inputs) and outputs, so that the session is
// created once and the weights are read once.
func graphIO(model []byte) (inputs, outputs []valueInfo, err error) {
	var graph []byte
	err = walkFields(model, func(f int, b []byte) error {
		if f == 7 {
			graph = b
		}
		return nil
	})
	if err == nil && graph == nil {
		err = errors.New("no graph")
	}
	if err != nil {
		return nil, nil, fmt.Errorf("onnx: reading model: %w", err)
	}
	inits := map[string]bool{}
	err = walkFields(graph, func(f int, b []byte) error {
		switch f {
		case 5: // initializer: TensorProto.name is field 8
			return walkFields(b, func(f int, b []byte) error {
				if f == 8 {
					inits[string(b)] = true
				}
				return nil
			})
		case 11, 12: // input, output
			vi, err := readValueInfo(b)
			if err != nil {
				return err
			}
			if f == 11 {
				inputs = append(inputs, vi)
			} else {
				outputs = append(outputs, vi)
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("onnx: reading model: %w", err)
	}
	inputs = slices.DeleteFunc(inputs, func(v valueInfo) bool { return inits[v.name] })
	return inputs, outputs, nil
}

// readValueInfo reads ValueInfoProto{name 1, type 2: TypeProto{tensor_type 1:
// {elem_type 1, shape 2: {dim 1 ...}}}}; non-tensor types get elemType 0.
func readValueInfo(b []byte) (valueInfo, error) {
	var vi valueInfo
	err := walkFields(b, func(f int, b []byte) error {
		switch f {
		case 1:
			vi.name = string(b)
		case 2:
			return walkFields(b, func(f int, b []byte) error {
				if f != 1 {
					return nil
				}
				return walkAll(b, func(f int, v uint64, b []byte) error {
					switch {
					case f == 1 && b == nil:
						vi.elemType = int(min(v, 1<<16))
					case f == 2 && b != nil:
						return walkFields(b, func(f int, _ []byte) error {
							if f == 1 {
								vi.rank++
							}
							return nil
						})
					}
					return nil
				})
			})
		}
		return nil
	})
	return vi, err
}
