package shm

import (
	"fmt"
	"sync/atomic"
)

// The one shared-memory layout of an instance: a single file
// /dev/shm/lightllm-<instance>/state holding, in order, the header, the
// request slot table, the per-slot token arrays, the per-slot logprob arrays
// (parallel to the token arrays), the per-slot text queues, the per-slot
// top-logprob rings, the router→infer command ring, the apiserver→router
// intake ring and the extras pool
// (variable-size per-request data: extras.go). docs/FORMAT.md draws it; docs/locking.md
// says who writes each field. Every field that more than one process touches
// is an atomic type, so the compiler refuses plain loads and stores; bulk data
// (token ids, text bytes) is plain memory published by an atomic store.
//
// The one rule: any change to what the file holds — a field added (reserved
// bytes put to use count), removed, moved, resized or given another
// meaning, a section added or reordered — bumps LayoutVersion and updates
// the tables in these comments, docs/FORMAT.md and layoutTable in
// layout_test.go. Every role of an instance runs the same build, so the
// version exists only to make Attach refuse a file another build created;
// it never needs to stay compatible.
const (
	// Magic is "LLMGOSHM" read as a little-endian uint64. Create stores it
	// last, so a file whose magic is 0 is still being initialised.
	Magic uint64 = 0x4D48534F474D4C4C
	// LayoutVersion changes whenever any offset, size or meaning changes.
	LayoutVersion uint32 = 8

	HeaderSize     = 1024 // bytes, sizeof(Header)
	SlotSize       = 512  // bytes, sizeof(Req)
	RoleStateSize  = 32   // bytes, sizeof(RoleState)
	LoadSize       = 64   // bytes, sizeof(Load)
	RingHeaderSize = 64   // bytes, sizeof(RingHeader)
	RingEntrySize  = 24   // bytes, sizeof(RingEntry)
	TextRecordSize = 12   // bytes of a text-queue record header (len, src index, flags)
	TopEntrySize   = 176  // bytes, sizeof(TopEntry)
	TopAltSize     = 8    // bytes, sizeof(TopAlt)

	// MaxRoles is the number of RoleState entries in the header.
	MaxRoles = 8
	// MaxBannedTokenIDs bounds the token ids a request bans (LightLLM's
	// LIGHTLLM_INVALID_TOKEN_IDS_MAX_LENGTH for logit_bias keys). They
	// live in what was reserved space of the slot, so the layout version
	// and slot size are unchanged: a slot written without them reads as
	// none banned.
	MaxBannedTokenIDs = 10
	// MaxStopTokenIDs bounds the stop token ids a request carries in shm
	// (the same bound as pkg/sampler's).
	MaxStopTokenIDs = 64
	// MaxTopLogprobs is the most alternatives a token's top-logprob entry
	// holds (OpenAI allows 5 for completions, 20 for chat).
	MaxTopLogprobs = 20
	// DefaultTopRingEntries is each slot's top-logprob ring length when
	// Sizes leave it 0: infer may run this many tokens ahead of the
	// apiserver's copy before it has to wait (docs/FORMAT.md).
	DefaultTopRingEntries = 64

	// sectionAlign keeps every section on its own cache line.
	sectionAlign = 64
	// fileAlign rounds the file to whole pages.
	fileAlign = 4096
)

// Limits on the sizes a header may declare. They keep offset arithmetic far
// from overflow and make a corrupt header an error instead of a huge mmap.
const (
	MaxSlots          = 1 << 16
	MaxReqTotalLenCap = 1 << 22
	MinTextQueueBytes = 64
	MaxTextQueueBytes = 1 << 20
	MinRingEntries    = 4
	MaxRingEntries    = 1 << 20
	MaxTopRingEntries = 1 << 12
	MaxFileSize       = 1 << 36 // 64 GiB
	MinExtrasBytes    = 4096
	MaxExtrasBytes    = 1 << 30
)

// Header is the first HeaderSize bytes of the file.
//
//	offset size field             writer            readers
//	0      8    Magic             launcher (Create)  all (Attach), stored last
//	8      4    Version           launcher           all
//	12     4    HeaderSize        launcher           all
//	16     8    FileSize          launcher           all
//	24     4    Slots             launcher           all (running_max_req_size)
//	28     4    MaxReqTotalLen    launcher           all (tokens per slot)
//	32     4    TextQueueBytes    launcher           all (bytes per slot text queue)
//	36     4    RingEntries       launcher           all
//	40     4    SlotSize          launcher           all
//	44     4    RingEntrySize     launcher           all
//	48     8    SlotsOff          launcher           all
//	56     8    TokensOff         launcher           all
//	64     8    TextOff           launcher           all
//	72     8    RingOff           launcher           all
//	80     8    CreatedUnixNano   launcher           supervisor, status
//	88     4    CreatorPid        launcher           supervisor, status
//	92     4    (reserved)
//	96     64   Load              see Load           see Load
//	160    256  Roles[8]          see RoleState      see RoleState
//	416    8    LogprobsOff       launcher           all
//	424    8    TopOff            launcher           all
//	432    4    TopRingEntries    launcher           all (top-logprob entries per slot)
//	436    4    TopEntrySize      launcher           all
//	440    8    ExtrasOff         launcher           all
//	448    4    ExtrasBytes       launcher           all (size of the extras pool)
//	452    4    (reserved)
//	456    8    IntakeOff         launcher           all (router's intake ring: RingEntries entries too)
//	464    8    DetokIntakeOff    launcher           all (detokenizer's intake ring: the same size)
//	472    552  (reserved, zero)
type Header struct {
	Magic           atomic.Uint64
	Version         atomic.Uint32
	HeaderSize      atomic.Uint32
	FileSize        atomic.Uint64
	Slots           atomic.Uint32
	MaxReqTotalLen  atomic.Uint32
	TextQueueBytes  atomic.Uint32
	RingEntries     atomic.Uint32
	SlotSize        atomic.Uint32
	RingEntrySize   atomic.Uint32
	SlotsOff        atomic.Uint64
	TokensOff       atomic.Uint64
	TextOff         atomic.Uint64
	RingOff         atomic.Uint64
	CreatedUnixNano atomic.Int64
	CreatorPid      atomic.Uint32
	_               uint32
	Load            Load
	Roles           [MaxRoles]RoleState
	LogprobsOff     atomic.Uint64
	TopOff          atomic.Uint64
	TopRingEntries  atomic.Uint32
	TopEntrySize    atomic.Uint32
	ExtrasOff       atomic.Uint64
	ExtrasBytes     atomic.Uint32
	_               uint32
	IntakeOff       atomic.Uint64
	DetokIntakeOff  atomic.Uint64
	_               [552]byte
}

// Load holds the counters that the router, /token_load and /health read.
//
//	offset size field                writer     readers
//	0      8    MaxTotalTokenNum     infer      router, apiserver (KV capacity after sizing)
//	8      8    FreeKVTokens         infer      router, apiserver, metric
//	16     8    EvictableKVTokens    infer      router (radix-cached, unreferenced)
//	24     8    EstimatedPeak        router     apiserver (/token_load)
//	32     8    Running              router     apiserver, health
//	40     8    Waiting              router     apiserver, health
//	48     8    LastProgressUnixNano infer      health, supervisor (wedge detection)
//	56     8    NextRequestID        apiserver  apiserver (Add; survives its restart)
type Load struct {
	MaxTotalTokenNum     atomic.Int64
	FreeKVTokens         atomic.Int64
	EvictableKVTokens    atomic.Int64
	EstimatedPeak        atomic.Int64
	Running              atomic.Int64
	Waiting              atomic.Int64
	LastProgressUnixNano atomic.Int64
	NextRequestID        atomic.Uint64
}

// RoleState is one role's liveness record, indexed by Role.
//
//	offset size field             writer        readers
//	0      4    Epoch             the role      all (bumped once per process start, stored last)
//	4      4    Pid               the role      supervisor, apiserver
//	8      8    HeartbeatUnixNano the role      supervisor, health
//	16     8    StartedUnixNano   the role      status
//	24     4    BellSeq           anyone        the role (futex word: Ring adds 1)
//	28     4    BellWaiters       the role      ringers (sleepers: futex low 16 bits, FIFO high 16; no wake when 0)
type RoleState struct {
	Epoch             atomic.Uint32
	Pid               atomic.Uint32
	HeartbeatUnixNano atomic.Int64
	StartedUnixNano   atomic.Int64
	BellSeq           atomic.Uint32
	BellWaiters       atomic.Uint32
}

// Req is one request slot (LightLLM's shm Req), SlotSize bytes: control
// words first, the stop-id array last.
//
//	offset size field                 writer                         readers
//	0      8    StateGen              owner of each transition (CAS) all: state (low 8 bits) | generation (high 32)
//	8      8    RequestID             apiserver                      all
//	16     8    GroupID               apiserver                      all
//	24     8    ArrivalUnixNano       apiserver                      router, metric
//	32     8    Seed (-1: random)     apiserver                      infer
//	40     4    OwnerPid              apiserver                      apiserver (recovery), status
//	44     4    OwnerEpoch            apiserver                      apiserver (recovery)
//	48     4    PromptLen             apiserver                      all
//	52     4    MaxNewTokens          apiserver                      router, infer
//	56     4    MinNewTokens          apiserver                      infer
//	60     4    TopK (-1: all)        apiserver                      infer
//	64     4    Temperature (f32)     apiserver                      infer
//	68     4    TopP (f32)            apiserver                      infer
//	72     4    RepetitionPenalty     apiserver                      infer
//	76     4    PresencePenalty       apiserver                      infer
//	80     4    FrequencyPenalty      apiserver                      infer
//	84     4    Flags (Flag*)         apiserver                      infer, router, detokenizer
//	88     4    NumStopTokenIDs       apiserver                      infer
//	92     4    Abort                 apiserver                      router, infer, detokenizer
//	96     4    OutputLen             infer                          router
//	100    4    KVLen                 infer                          router
//	104    4    CandetokenOutLen      infer (stored last)            detokenizer, router
//	108    4    FinishStatus          infer; router if never run     all
//	112    4    FinishTokenIndex      infer; router if never run     detokenizer, apiserver
//	116    4    InferReleased         infer; router if never run     router, apiserver
//	120    4    MinP (f32)            apiserver                      infer
//	124    4    PromptCacheLen        infer                          apiserver, metric
//	128    4    StopMatched           detokenizer                    router, apiserver
//	132    4    StopMatchedIndex      detokenizer                    apiserver
//	136    4    PrefixOffset          detokenizer                    detokenizer (resume)
//	140    4    ReadOffset            detokenizer                    detokenizer (resume)
//	144    4    EmittedOutLen         detokenizer                    detokenizer (resume), apiserver
//	148    4    DetokDone             detokenizer                    apiserver (LightLLM can_released_mark)
//	152    8    TextHead              apiserver (consumer)           detokenizer
//	160    8    TextTail              detokenizer (producer)         apiserver
//	168    4    RouterMarks           router                         router (resume: NEW already sent)
//	172    4    IsPaused              infer                          router
//	176    4    TopLogprobs           apiserver                      infer (alternatives per token, 0..20)
//	180    4    TopRead               apiserver                      infer (top entries copied out)
//	184    4    NumBannedTokenIDs     apiserver                      infer
//	188    40   BannedTokenIDs[10]    apiserver                      infer (never sampled: LightLLM's logit_bias keys)
//	228    4    DecayStart            apiserver                      infer (exponential_decay_length_penalty start)
//	232    4    DecayFactor (f32)     apiserver                      infer (its factor; 0 or 1: off)
//	236    4    ExtrasLen             apiserver                      infer, detokenizer (bytes of extras; 0: none)
//	240    8    ExtrasOff             apiserver                      infer, detokenizer (offset in the extras pool)
//	248    4    EmbedLen              infer                          apiserver (floats of an embedding in the logprob array)
//	252    4    (reserved, zero)
//	256    256  StopTokenIDs[64]      apiserver                      infer
type Req struct {
	StateGen          atomic.Uint64
	RequestID         atomic.Uint64
	GroupID           atomic.Uint64
	ArrivalUnixNano   atomic.Int64
	Seed              atomic.Int64
	OwnerPid          atomic.Uint32
	OwnerEpoch        atomic.Uint32
	PromptLen         atomic.Uint32
	MaxNewTokens      atomic.Uint32
	MinNewTokens      atomic.Uint32
	TopK              atomic.Int32
	Temperature       atomic.Uint32
	TopP              atomic.Uint32
	RepetitionPenalty atomic.Uint32
	PresencePenalty   atomic.Uint32
	FrequencyPenalty  atomic.Uint32
	Flags             atomic.Uint32
	NumStopTokenIDs   atomic.Uint32
	Abort             atomic.Uint32
	OutputLen         atomic.Uint32
	KVLen             atomic.Uint32
	CandetokenOutLen  atomic.Uint32
	FinishStatus      atomic.Uint32
	FinishTokenIndex  atomic.Uint32
	InferReleased     atomic.Uint32
	MinP              atomic.Uint32
	PromptCacheLen    atomic.Uint32
	StopMatched       atomic.Uint32
	StopMatchedIndex  atomic.Uint32
	PrefixOffset      atomic.Uint32
	ReadOffset        atomic.Uint32
	EmittedOutLen     atomic.Uint32
	DetokDone         atomic.Uint32
	TextHead          atomic.Uint64
	TextTail          atomic.Uint64
	RouterMarks       atomic.Uint32
	IsPaused          atomic.Uint32
	TopLogprobs       atomic.Uint32
	TopRead           atomic.Uint32
	NumBannedTokenIDs atomic.Uint32
	BannedTokenIDs    [MaxBannedTokenIDs]atomic.Int32
	DecayStart        atomic.Uint32
	DecayFactor       atomic.Uint32
	ExtrasLen         atomic.Uint32
	ExtrasOff         atomic.Uint64
	EmbedLen          atomic.Uint32
	_                 [4]byte
	StopTokenIDs      [MaxStopTokenIDs]atomic.Int32
}

// TopEntry is one output token's most likely alternatives, in its slot's
// top-logprob ring at index (output index mod TopRingEntries). It is a
// seqlock: infer stores Index 0, then the rest, then Index = output index +
// 1; a reader copies the entry and accepts it only if Index (read before and
// after) is the one it wants and Gen is its slot generation.
//
//	offset size field    writer readers
//	0      4    Index    infer  apiserver (output index + 1; 0 while written)
//	4      4    Gen      infer  apiserver (slot generation it belongs to)
//	8      4    Count    infer  apiserver (alternatives in Alts, best first)
//	12     4    Rank     infer  apiserver (rank of the chosen token, 1 = most likely)
//	16     160  Alts[20] infer  apiserver
type TopEntry struct {
	Index atomic.Uint32
	Gen   atomic.Uint32
	Count atomic.Uint32
	Rank  atomic.Uint32
	Alts  [MaxTopLogprobs]TopAlt
}

// TopAlt is one alternative token.
//
//	offset size field   writer readers
//	0      4    ID      infer  apiserver
//	4      4    Logprob infer  apiserver (f32 bits)
type TopAlt struct {
	ID      atomic.Int32
	Logprob atomic.Uint32
}

// RingHeader precedes the entries of the command ring and of the intake
// ring. For the intake ring the producer is the apiserver and the consumer
// the router; its Tail is where producers claim positions (compare-and-swap)
// and its four bell words are unused (it rings the router's role bell, and
// a producer never waits for room).
//
//	offset size field        writer           readers
//	0      8    Head         infer (consumer) router (free space)
//	8      8    Tail         router (producer) infer (a hint; each entry's Seq is the truth)
//	16     4    DataSeq      router           infer (futex word: rung after publishing)
//	20     4    DataWaiters  infer            router
//	24     4    SpaceSeq     infer            router (futex word: rung after consuming)
//	28     4    SpaceWaiters router           infer
//	32     32   (reserved, zero)
type RingHeader struct {
	Head         atomic.Uint64
	Tail         atomic.Uint64
	DataSeq      atomic.Uint32
	DataWaiters  atomic.Uint32
	SpaceSeq     atomic.Uint32
	SpaceWaiters atomic.Uint32
	_            [32]byte
}

// RingEntry is one command (or one intake announcement: apiserver → router,
// Op QUEUED, Arg index<<16 | group size). The producer fills Op..Arg, then
// stores Seq = position+1; the consumer at position p accepts the entry only
// when Seq==p+1.
//
//	offset size field writer readers
//	0      8    Seq   router infer (stored last)
//	8      4    Op    router infer
//	12     4    Slot  router infer
//	16     4    Gen   router infer (slot generation the command is for)
//	20     4    Arg   router infer (Op-specific; 0 for NEW, the command ring's only op)
type RingEntry struct {
	Seq  atomic.Uint64
	Op   atomic.Uint32
	Slot atomic.Uint32
	Gen  atomic.Uint32
	Arg  atomic.Uint32
}

// Sizes are the dimensions of a region, fixed at creation.
type Sizes struct {
	Slots          uint32 // running_max_req_size
	MaxReqTotalLen uint32 // tokens per slot (prompt + output)
	TextQueueBytes uint32 // bytes per slot text queue; a multiple of 64
	RingEntries    uint32 // command ring capacity, and the intake ring's; 0 means 4*Slots (at least 64)
	// TopRingEntries is each slot's top-logprob ring length; 0 means
	// DefaultTopRingEntries.
	TopRingEntries uint32
	// ExtrasBytes is the extras pool shared by all slots (a multiple of
	// 64); 0 means DefaultExtrasBytes.
	ExtrasBytes uint32
}

// DefaultExtrasBytes is the extras pool when Sizes leave it 0.
const DefaultExtrasBytes = 4 << 20

// withDefaults fills the derived ring size.
func (s Sizes) withDefaults() Sizes {
	if s.RingEntries == 0 {
		s.RingEntries = max(64, 4*s.Slots)
		s.RingEntries = min(s.RingEntries, MaxRingEntries)
	}
	if s.TextQueueBytes == 0 {
		s.TextQueueBytes = 4096
	}
	if s.TopRingEntries == 0 {
		s.TopRingEntries = DefaultTopRingEntries
	}
	if s.ExtrasBytes == 0 {
		s.ExtrasBytes = DefaultExtrasBytes
	}
	return s
}

// Validate reports the first size that is out of range.
func (s Sizes) Validate() error {
	switch {
	case s.Slots == 0 || s.Slots > MaxSlots:
		return fmt.Errorf("slots %d out of range [1, %d]", s.Slots, MaxSlots)
	case s.MaxReqTotalLen == 0 || s.MaxReqTotalLen > MaxReqTotalLenCap:
		return fmt.Errorf("max_req_total_len %d out of range [1, %d]", s.MaxReqTotalLen, MaxReqTotalLenCap)
	case s.TextQueueBytes < MinTextQueueBytes || s.TextQueueBytes > MaxTextQueueBytes || s.TextQueueBytes%sectionAlign != 0:
		return fmt.Errorf("text queue bytes %d: want a multiple of %d in [%d, %d]",
			s.TextQueueBytes, sectionAlign, MinTextQueueBytes, MaxTextQueueBytes)
	case s.RingEntries < MinRingEntries || s.RingEntries > MaxRingEntries:
		return fmt.Errorf("ring entries %d out of range [%d, %d]", s.RingEntries, MinRingEntries, MaxRingEntries)
	case s.TopRingEntries == 0 || s.TopRingEntries > MaxTopRingEntries:
		return fmt.Errorf("top-logprob ring entries %d out of range [1, %d]", s.TopRingEntries, MaxTopRingEntries)
	case s.ExtrasBytes < MinExtrasBytes || s.ExtrasBytes > MaxExtrasBytes || s.ExtrasBytes%sectionAlign != 0:
		return fmt.Errorf("extras pool bytes %d: want a multiple of %d in [%d, %d]", s.ExtrasBytes, sectionAlign, MinExtrasBytes, MaxExtrasBytes)
	}
	return nil
}

// PerSlotBytes is what one request slot costs in the region: its Req, token
// and logprob arrays, text queue and top-logprob ring (defaults applied),
// for callers that size the slot table against a memory budget.
func (s Sizes) PerSlotBytes() uint64 {
	s = s.withDefaults()
	return SlotSize + uint64(s.MaxReqTotalLen)*8 + uint64(s.TextQueueBytes) + uint64(s.TopRingEntries)*TopEntrySize
}

// layout is where each section starts; computed from Sizes alone so that
// attach can recompute it and compare with what the header claims.
type layout struct {
	SlotsOff, TokensOff, LogprobsOff, TextOff, TopOff, RingOff, IntakeOff, DetokIntakeOff, ExtrasOff, FileSize uint64
}

func alignUp(n, a uint64) uint64 { return (n + a - 1) / a * a }

// computeLayout assumes s.Validate() passed; the limits keep every product
// below 2^40, far from uint64 overflow.
func computeLayout(s Sizes) (layout, error) {
	var l layout
	l.SlotsOff = HeaderSize
	l.TokensOff = alignUp(l.SlotsOff+uint64(s.Slots)*SlotSize, sectionAlign)
	l.LogprobsOff = alignUp(l.TokensOff+uint64(s.Slots)*uint64(s.MaxReqTotalLen)*4, sectionAlign)
	l.TextOff = alignUp(l.LogprobsOff+uint64(s.Slots)*uint64(s.MaxReqTotalLen)*4, sectionAlign)
	l.TopOff = alignUp(l.TextOff+uint64(s.Slots)*uint64(s.TextQueueBytes), sectionAlign)
	l.RingOff = alignUp(l.TopOff+uint64(s.Slots)*uint64(s.TopRingEntries)*TopEntrySize, sectionAlign)
	l.IntakeOff = alignUp(l.RingOff+RingHeaderSize+uint64(s.RingEntries)*RingEntrySize, sectionAlign)
	l.DetokIntakeOff = alignUp(l.IntakeOff+RingHeaderSize+uint64(s.RingEntries)*RingEntrySize, sectionAlign)
	l.ExtrasOff = alignUp(l.DetokIntakeOff+RingHeaderSize+uint64(s.RingEntries)*RingEntrySize, sectionAlign)
	l.FileSize = alignUp(l.ExtrasOff+uint64(s.ExtrasBytes), fileAlign)
	if l.FileSize > MaxFileSize {
		return l, fmt.Errorf("layout needs %d bytes, more than the %d limit", l.FileSize, uint64(MaxFileSize))
	}
	return l, nil
}
