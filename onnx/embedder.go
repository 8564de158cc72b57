package onnx

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	ort "github.com/yalue/onnxruntime_go"
)

// Tokenizer turns text into model input ids. NewTokenizer adapts the
// onnx/tokenizer package's tokenizer.json loader; tests and callers with other
// vocabularies may bring their own. Implementations must be safe for
// concurrent use.
type Tokenizer interface {
	// Encode returns the ids of text including the model's special tokens
	// (<s> ... </s>), truncated to the embedder's MaxTokens, and whether
	// text was cut to fit.
	Encode(text string) (ids []int32, truncated bool, err error)
	// PadID is the id that fills the tail of shorter sequences in a batch.
	PadID() int32
}

// Device selects the execution provider.
type Device string

const (
	DeviceCPU      Device = "cpu"
	DeviceCUDA     Device = "cuda"
	DeviceTensorRT Device = "tensorrt" // TensorRT first, CUDA for what it does not take
)

// Options configures Open. The zero value of each field means its documented
// default; ModelPath and a tokenizer (TokenizerPath or Tokenizer) are required.
type Options struct {
	// ModelPath is the model.onnx file. Its external data (weights) is read
	// by ONNX Runtime from the locations the model names, relative to its
	// directory.
	ModelPath string
	// DataFiles are the external data files hashed into the fingerprint.
	// Default: the files the model's tensors name as their external data
	// location (model.onnx_data, and for BGE-M3 also a constant stored apart).
	DataFiles []string
	// TokenizerPath is a Hugging Face tokenizer.json; it is hashed into the
	// fingerprint even when Tokenizer is set.
	TokenizerPath string
	// Tokenizer, if set, is used instead of loading TokenizerPath; it must
	// truncate to MaxTokens (Embed fails on a longer sequence).
	Tokenizer Tokenizer
	// LibraryPath is libonnxruntime.so; default: see RuntimeLibraryPath.
	LibraryPath string

	// MaxTokens is the longest input in tokens, special tokens included;
	// longer texts are truncated (EmbedDetailed reports it). Default 8192,
	// BGE-M3's context. It must not exceed the model's position table.
	MaxTokens int
	// BatchTokens bounds padded tokens per ORT run (see planBatches for the
	// attention term). Default 8192.
	BatchTokens int
	// MaxBatch bounds texts per ORT run. Default 32.
	MaxBatch int
	// MaxPadding bounds padded tokens per real token in one ORT run: a text
	// that would make its length-sorted batch pad more starts the next one.
	// Default 1.1 on the CPU, where a batch runs only slightly faster per
	// token than its texts one by one, so padding is mostly waste
	// (bench/results/onnx.md); unbounded on a GPU, where batches pay. A
	// negative value means unbounded everywhere.
	MaxPadding float64

	// IntraOpThreads and InterOpThreads size ORT's thread pools; 0 lets ORT
	// choose (one intra-op thread per physical core).
	IntraOpThreads, InterOpThreads int
	// Spin lets ORT's intra-op threads spin while they wait for work (ORT's
	// own default). Off by default: on a machine whose cores other programs
	// use too, spinning threads take turns from the ones doing the work
	// (BGE-M3-sized model, 2 cores at load 11: query 0.61x the wall time and
	// 0.68x the CPU time without spinning; bench/results/onnx.md).
	Spin bool

	// Device selects the execution provider; default DeviceCPU.
	Device Device
	// DeviceID is the GPU ordinal for DeviceCUDA and DeviceTensorRT.
	DeviceID int
	// CPUFallback runs on the CPU when the requested GPU provider cannot be
	// set up, instead of failing Open; Provider reports what was chosen.
	CPUFallback bool

	// Output names the model output to use; default: the first of
	// sentence_embedding, dense_vecs (used as they are) and
	// last_hidden_state (CLS pooling + L2 normalization) the model has, or
	// its only output.
	Output string

	// tune, when set (tests only), adjusts the session options after the
	// ones above: how the CPU-path measurements try settings Open does not
	// expose.
	tune func(*ort.SessionOptions) error
	// inOrder (tests only) batches texts in the caller's order instead of
	// by length: the measurement of what length bucketing saves.
	inOrder bool
}

// Embedding is one text's result from EmbedDetailed.
type Embedding struct {
	Vector    []float32
	Tokens    int  // input tokens, special tokens included, after truncation
	Truncated bool // the text was longer than MaxTokens and was cut
}

// Stats are cumulative counters since Open; durations add up across
// concurrent calls.
type Stats struct {
	Texts, Batches, Tokens, PaddedTokens int64

	Tokenize time.Duration // text -> ids
	Prepare  time.Duration // ids -> input tensors
	Run      time.Duration // ONNX Runtime
	Pool     time.Duration // output -> normalized vectors
}

// defaultCPUPadding is Options.MaxPadding's default on the CPU.
const defaultCPUPadding = 1.1

// ErrClosed is returned by Embed after Close.
var ErrClosed = errors.New("onnx: embedder is closed")

// Embedder computes dense embeddings with an ONNX encoder. It is safe for
// concurrent use; concurrent calls run concurrently on the one session.
type Embedder struct {
	mu     sync.RWMutex // write-held only by Close
	sess   *ort.DynamicAdvancedSession
	closed bool

	tok         Tokenizer
	inputs      []string // session input order: input_ids, then optional ones
	output      string
	pooling     Pooling
	dim         int
	provider    string
	fingerprint string
	maxTokens   int
	batchTokens int
	maxBatch    int
	maxPad      float64 // 0: unbounded
	inOrder     bool

	stats struct {
		texts, batches, tokens, padded atomic.Int64
		tokenize, prepare, run, pool   atomic.Int64
	}
}

const (
	inputIDs      = "input_ids"
	attentionMask = "attention_mask"
	tokenTypeIDs  = "token_type_ids"
)

// Open loads the model and tokenizer and creates the ONNX Runtime session.
// It runs the model once on an empty text to learn the dimension.
func Open(opts Options) (*Embedder, error) {
	if opts.ModelPath == "" {
		return nil, errors.New("onnx: Options.ModelPath is required")
	}
	if opts.TokenizerPath == "" && opts.Tokenizer == nil {
		return nil, errors.New("onnx: Options.TokenizerPath or Options.Tokenizer is required")
	}
	e := &Embedder{
		maxTokens:   cmp.Or(opts.MaxTokens, 8192),
		batchTokens: cmp.Or(opts.BatchTokens, 8192),
		maxBatch:    cmp.Or(opts.MaxBatch, 32),
		inOrder:     opts.inOrder,
	}
	switch {
	case opts.MaxPadding < 0:
	case opts.MaxPadding > 0 && opts.MaxPadding < 1:
		return nil, fmt.Errorf("onnx: MaxPadding %g is below 1 (padded tokens per real token)", opts.MaxPadding)
	case opts.MaxPadding > 0:
		e.maxPad = opts.MaxPadding
	case cmp.Or(opts.Device, DeviceCPU) == DeviceCPU:
		e.maxPad = defaultCPUPadding
	}
	if opts.MaxTokens < 0 || opts.BatchTokens < 0 || opts.MaxBatch < 0 ||
		opts.IntraOpThreads < 0 || opts.InterOpThreads < 0 || opts.DeviceID < 0 {
		return nil, errors.New("onnx: negative option value")
	}
	switch opts.Device {
	case "", DeviceCPU, DeviceCUDA, DeviceTensorRT:
	default:
		return nil, fmt.Errorf("onnx: unknown device %q (want %q, %q or %q)", opts.Device, DeviceCPU, DeviceCUDA, DeviceTensorRT)
	}
	if e.maxTokens < 2 {
		return nil, fmt.Errorf("onnx: MaxTokens %d leaves no room for the special tokens", e.maxTokens)
	}
	if st, err := os.Stat(opts.ModelPath); err != nil {
		return nil, fmt.Errorf("onnx: model: %w", err)
	} else if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("onnx: model %s is not a regular file", opts.ModelPath)
	}
	e.tok = opts.Tokenizer
	if e.tok == nil {
		t, err := NewTokenizer(opts.TokenizerPath, e.maxTokens)
		if err != nil {
			return nil, err
		}
		e.tok = t
	}

	lib, err := RuntimeLibraryPath(opts.LibraryPath)
	if err != nil {
		return nil, err
	}
	if err := initRuntime(lib); err != nil {
		return nil, err
	}
	// The graph is read here once: for its inputs and outputs, the external
	// data it names and the fingerprint. ORT reads the weights itself.
	model, err := os.ReadFile(opts.ModelPath)
	if err != nil {
		return nil, fmt.Errorf("onnx: model: %w", err)
	}
	ins, outs, err := graphIO(model)
	if err != nil {
		return nil, fmt.Errorf("%w (file %s)", err, opts.ModelPath)
	}
	if err := e.pickInputs(ins); err != nil {
		return nil, err
	}
	if err := e.pickOutput(outs, opts.Output); err != nil {
		return nil, err
	}
	if e.sess, e.provider, err = e.newSession(opts); err != nil {
		return nil, err
	}
	probe, err := e.EmbedDetailed(context.Background(), []string{""})
	if err != nil {
		e.Close()
		return nil, fmt.Errorf("onnx: probe run: %w", err)
	}
	e.dim = len(probe[0].Vector)
	if e.dim == 0 {
		e.Close()
		return nil, errors.New("onnx: model produced empty vectors")
	}
	e.fingerprint, err = fingerprint(opts, model, e)
	if err != nil {
		e.Close()
		return nil, err
	}
	e.resetStats() // the probe is not the caller's work
	return e, nil
}

func (e *Embedder) pickInputs(ins []valueInfo) error {
	have := map[string]bool{}
	for _, in := range ins {
		switch in.name {
		case inputIDs, attentionMask, tokenTypeIDs:
		default:
			return fmt.Errorf("onnx: model input %q is not supported (want %s, %s, %s)",
				in.name, inputIDs, attentionMask, tokenTypeIDs)
		}
		if in.elemType != onnxInt64 {
			return fmt.Errorf("onnx: model input %q has ONNX element type %d, want int64 (%d)", in.name, in.elemType, onnxInt64)
		}
		have[in.name] = true
	}
	if !have[inputIDs] {
		return fmt.Errorf("onnx: model has no %q input", inputIDs)
	}
	for _, name := range []string{inputIDs, attentionMask, tokenTypeIDs} {
		if have[name] {
			e.inputs = append(e.inputs, name)
		}
	}
	return nil
}

func (e *Embedder) pickOutput(outs []valueInfo, want string) error {
	byName := map[string]valueInfo{}
	var names []string
	for _, o := range outs {
		byName[o.name] = o
		names = append(names, o.name)
	}
	var o valueInfo
	var ok bool
	if want != "" {
		if o, ok = byName[want]; !ok {
			return fmt.Errorf("onnx: model has no output %q (it has %s)", want, strings.Join(names, ", "))
		}
	} else {
		for _, n := range []string{"sentence_embedding", "dense_vecs", "last_hidden_state"} {
			if o, ok = byName[n]; ok {
				break
			}
		}
		if !ok && len(outs) == 1 {
			o, ok = outs[0], true
		}
		if !ok {
			return fmt.Errorf("onnx: cannot tell which output is the embedding (outputs: %s); set Options.Output",
				strings.Join(names, ", "))
		}
	}
	if o.elemType != onnxFloat {
		return fmt.Errorf("onnx: output %q has ONNX element type %d, want float32 (%d)", o.name, o.elemType, onnxFloat)
	}
	switch o.rank {
	case 2:
		e.pooling = PoolNone
	case 3:
		e.pooling = PoolCLS
	default:
		return fmt.Errorf("onnx: output %q has rank %d, want 2 ([batch, dim]) or 3 ([batch, seq, dim])",
			o.name, o.rank)
	}
	e.output = o.name
	return nil
}

// newSession creates the session on the requested device, or on the CPU
// when that fails and opts.CPUFallback allows it (a GPU provider can fail
// when it is added or only when the session is created). It returns the
// provider actually used.
func (e *Embedder) newSession(opts Options) (*ort.DynamicAdvancedSession, string, error) {
	dev := cmp.Or(opts.Device, DeviceCPU)
	sess, err := e.trySession(opts, dev)
	if err == nil || dev == DeviceCPU {
		return sess, string(dev), err
	}
	if !opts.CPUFallback {
		return nil, "", fmt.Errorf("onnx: %s execution provider unavailable (set Options.CPUFallback "+
			"to run on the CPU instead): %w", dev, err)
	}
	sess, cpuErr := e.trySession(opts, DeviceCPU)
	return sess, fmt.Sprintf("cpu (fallback: %s unavailable: %v)", dev, err), cpuErr
}

func (e *Embedder) trySession(opts Options, dev Device) (*ort.DynamicAdvancedSession, error) {
	so, err := ort.NewSessionOptions()
	if err != nil {
		return nil, fmt.Errorf("onnx: session options: %w", err)
	}
	defer so.Destroy()
	if opts.IntraOpThreads > 0 {
		if err := so.SetIntraOpNumThreads(opts.IntraOpThreads); err != nil {
			return nil, fmt.Errorf("onnx: intra-op threads: %w", err)
		}
	}
	if opts.InterOpThreads > 0 {
		if err := so.SetInterOpNumThreads(opts.InterOpThreads); err != nil {
			return nil, fmt.Errorf("onnx: inter-op threads: %w", err)
		}
	}
	if !opts.Spin {
		if err := so.AddSessionConfigEntry("session.intra_op.allow_spinning", "0"); err != nil {
			return nil, fmt.Errorf("onnx: thread spinning: %w", err)
		}
	}
	if opts.tune != nil {
		if err := opts.tune(so); err != nil {
			return nil, fmt.Errorf("onnx: session options: %w", err)
		}
	}
	if dev != DeviceCPU {
		if err := appendGPU(so, dev, opts.DeviceID); err != nil {
			return nil, err
		}
	}
	sess, err := ort.NewDynamicAdvancedSession(opts.ModelPath, e.inputs, []string{e.output}, so)
	if err != nil {
		return nil, fmt.Errorf("onnx: creating session for %s: %w", opts.ModelPath, err)
	}
	return sess, nil
}

// appendGPU adds the GPU providers to so.
func appendGPU(so *ort.SessionOptions, d Device, id int) error {
	devID := map[string]string{"device_id": fmt.Sprint(id)}
	if d == DeviceTensorRT {
		trt, err := ort.NewTensorRTProviderOptions()
		if err != nil {
			return err
		}
		defer trt.Destroy()
		if err := trt.Update(devID); err != nil {
			return err
		}
		if err := so.AppendExecutionProviderTensorRT(trt); err != nil {
			return err
		}
	}
	cuda, err := ort.NewCUDAProviderOptions()
	if err != nil {
		return err
	}
	defer cuda.Destroy()
	if err := cuda.Update(devID); err != nil {
		return err
	}
	return so.AppendExecutionProviderCUDA(cuda)
}

// Embed returns one L2-normalized vector per text, in order. An empty batch
// gives an empty result and no error; an empty string is embedded like any
// other text (its vector comes from the special tokens alone). Texts longer
// than MaxTokens are truncated silently here; use EmbedDetailed to know.
// Invalid UTF-8 is an error.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	res, err := e.EmbedDetailed(ctx, texts)
	if err != nil {
		return nil, err
	}
	out := make([][]float32, len(res))
	for i := range res {
		out[i] = res[i].Vector
	}
	return out, nil
}

// EmbedDetailed is Embed that also reports token counts and truncation.
// The context is checked between batches and stops a running batch.
func (e *Embedder) EmbedDetailed(ctx context.Context, texts []string) ([]Embedding, error) {
	for i, t := range texts {
		if !utf8.ValidString(t) {
			return nil, fmt.Errorf("onnx: text %d is not valid UTF-8", i)
		}
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return nil, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	out := make([]Embedding, len(texts))
	// Texts are tokenized and length-sorted a window at a time, so the ids
	// held at once stay bounded however many texts a call brings.
	for lo := 0; lo < len(texts); lo += sortWindow {
		if err := e.embedWindow(ctx, texts[lo:min(lo+sortWindow, len(texts))], out[lo:], lo); err != nil {
			return nil, err
		}
	}
	e.stats.texts.Add(int64(len(texts)))
	return out, nil
}

// sortWindow is how many texts are tokenized and sorted into batches together.
const sortWindow = 4096

// embedWindow embeds texts into out[:len(texts)]; base is the index of
// texts[0] in the caller's slice, for error messages.
func (e *Embedder) embedWindow(ctx context.Context, texts []string, out []Embedding, base int) error {
	start := time.Now()
	ids := make([][]int32, len(texts))
	lens := make([]int, len(texts))
	for i, t := range texts {
		var err error
		ids[i], out[i].Truncated, err = e.tok.Encode(t)
		if err != nil {
			return fmt.Errorf("onnx: tokenizing text %d: %w", base+i, err)
		}
		if len(ids[i]) == 0 || len(ids[i]) > e.maxTokens {
			return fmt.Errorf("onnx: tokenizer gave %d ids for text %d, want 1..%d", len(ids[i]), base+i, e.maxTokens)
		}
		lens[i] = len(ids[i])
		out[i].Tokens = lens[i]
	}
	e.stats.tokenize.Add(int64(time.Since(start)))

	batches := planBatches(lens, e.batchTokens, e.maxBatch, e.maxPad)
	if e.inOrder {
		batches = batchesInOrder(len(lens), e.maxBatch)
	}
	for _, batch := range batches {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := e.runBatch(ctx, batch, ids, out); err != nil {
			return err
		}
	}
	return nil
}

// runBatch runs the sequences ids[batch[k]] padded to one length and stores
// their vectors in out[batch[k]].
func (e *Embedder) runBatch(ctx context.Context, batch []int, ids [][]int32, out []Embedding) error {
	start := time.Now()
	b, t := len(batch), 0
	for _, i := range batch {
		t = max(t, len(ids[i]))
	}
	inIDs := make([]int64, b*t)
	mask := make([]int64, b*t)
	pad := int64(e.tok.PadID())
	nTokens := 0
	for row, i := range batch {
		r := inIDs[row*t : (row+1)*t]
		for j := range r {
			r[j] = pad
		}
		for j, id := range ids[i] {
			r[j] = int64(id)
			mask[row*t+j] = 1
		}
		nTokens += len(ids[i])
	}
	shape := ort.NewShape(int64(b), int64(t))
	inputs := make([]ort.Value, len(e.inputs))
	defer func() {
		for _, v := range inputs {
			if v != nil {
				v.Destroy()
			}
		}
	}()
	for k, name := range e.inputs {
		data := inIDs
		switch name {
		case attentionMask:
			data = mask
		case tokenTypeIDs:
			data = make([]int64, b*t)
		}
		v, err := ort.NewTensor(shape, data)
		if err != nil {
			return fmt.Errorf("onnx: input tensor: %w", err)
		}
		inputs[k] = v
	}
	runStart := time.Now()
	e.stats.prepare.Add(int64(runStart.Sub(start)))

	outputs := []ort.Value{nil}
	err := e.run(ctx, inputs, outputs)
	if outputs[0] != nil {
		defer outputs[0].Destroy()
	}
	poolStart := time.Now()
	e.stats.run.Add(int64(poolStart.Sub(runStart)))
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("onnx: running model: %w", err)
	}
	if err := e.pool(outputs[0], batch, t, out); err != nil {
		return err
	}
	e.stats.pool.Add(int64(time.Since(poolStart)))
	e.stats.batches.Add(1)
	e.stats.tokens.Add(int64(nTokens))
	e.stats.padded.Add(int64(b * t))
	return nil
}

// run is one session run that ctx can stop midway through ORT's terminate flag.
func (e *Embedder) run(ctx context.Context, inputs, outputs []ort.Value) error {
	if ctx.Done() == nil {
		return e.sess.Run(inputs, outputs)
	}
	ro, err := ort.NewRunOptions()
	if err != nil {
		return err
	}
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(fired)
		ro.Terminate()
	})
	defer func() {
		if !stop() {
			<-fired // Terminate is running or ran: let it finish before Destroy
		}
		ro.Destroy()
	}()
	return e.sess.RunWithOptions(inputs, outputs, ro)
}

func (e *Embedder) pool(v ort.Value, batch []int, t int, out []Embedding) error {
	tensor, ok := v.(*ort.Tensor[float32])
	if !ok {
		return fmt.Errorf("onnx: output %q is %T, want a float32 tensor", e.output, v)
	}
	shape := tensor.GetShape()
	data := tensor.GetData()
	b := len(batch)
	var dim, stride int
	switch {
	case e.pooling == PoolCLS && len(shape) == 3 && shape[0] == int64(b) && shape[1] == int64(t):
		dim = int(shape[2])
		stride = t * dim
	case e.pooling == PoolNone && len(shape) == 2 && shape[0] == int64(b):
		dim = int(shape[1])
		stride = dim
	default:
		return fmt.Errorf("onnx: output %q has shape %v for a [%d, %d] input", e.output, shape, b, t)
	}
	if dim <= 0 || len(data) < b*stride || (e.dim != 0 && dim != e.dim) {
		return fmt.Errorf("onnx: output %q has shape %v, want dimension %d", e.output, shape, e.dim)
	}
	for row, i := range batch {
		vec := make([]float32, dim)
		copy(vec, data[row*stride:row*stride+dim]) // CLS is the first token's row
		if e.pooling == PoolCLS {
			normalize(vec)
		}
		out[i].Vector = vec
	}
	return nil
}

// Dim is the embedding dimension.
func (e *Embedder) Dim() int { return e.dim }

// Fingerprint identifies the model, its weights, the tokenizer, the output
// and pooling used, the dimension and the truncation length: two embedders
// with equal fingerprints give the same vectors.
func (e *Embedder) Fingerprint() string { return e.fingerprint }

// Provider says which execution provider runs the model ("cpu", "cuda",
// "tensorrt", or "cpu (fallback: ...)" with the reason).
func (e *Embedder) Provider() string { return e.provider }

// Stats returns cumulative counters.
func (e *Embedder) Stats() Stats {
	s := &e.stats
	return Stats{
		Texts: s.texts.Load(), Batches: s.batches.Load(), Tokens: s.tokens.Load(), PaddedTokens: s.padded.Load(),
		Tokenize: time.Duration(s.tokenize.Load()), Prepare: time.Duration(s.prepare.Load()),
		Run: time.Duration(s.run.Load()), Pool: time.Duration(s.pool.Load()),
	}
}

func (e *Embedder) resetStats() {
	s := &e.stats
	for _, c := range []*atomic.Int64{&s.texts, &s.batches, &s.tokens, &s.padded, &s.tokenize, &s.prepare, &s.run, &s.pool} {
		c.Store(0)
	}
}

// Close releases the session. It waits for running calls; later calls return
// ErrClosed. The process-wide ONNX Runtime environment stays loaded.
func (e *Embedder) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	if e.sess == nil {
		return nil
	}
	return e.sess.Destroy()
}
