package quant

import "fmt"

// Metric names how the distance between two vectors is measured. For every
// metric a smaller distance means closer.
type Metric uint8

const (
	// Cosine is 1 - cos(a, b). Vectors are L2-normalized before they are
	// quantized, so it reduces to a dot product.
	Cosine Metric = iota + 1
	// Dot is the negated inner product, -a·b.
	Dot
	// L2 is the squared Euclidean distance.
	L2
)

// String returns the metric's name as used in configuration ("cosine", "dot", "l2").
func (m Metric) String() string {
	switch m {
	case Cosine:
		return "cosine"
	case Dot:
		return "dot"
	case L2:
		return "l2"
	}
	return fmt.Sprintf("Metric(%d)", uint8(m))
}

// ParseMetric parses a metric name as written by String.
func ParseMetric(s string) (Metric, error) {
	switch s {
	case "cosine":
		return Cosine, nil
	case "dot", "ip":
		return Dot, nil
	case "l2", "euclidean":
		return L2, nil
	}
	return 0, fmt.Errorf("quant: unknown metric %q (want cosine, dot or l2)", s)
}

// Valid reports whether m is one of the defined metrics.
func (m Metric) Valid() bool { return m >= Cosine && m <= L2 }
