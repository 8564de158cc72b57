package beir

import "flag"

var sweep = flag.Bool("sweep", false, "run the parameter sweeps (measurements, slow)")
