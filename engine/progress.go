package engine

// Progress receives how far a long operation (CheckProgress, CompactProgress) has come: done
// of total units (records). It is called from the operation's goroutine, often; it must be
// cheap and must not call into the DB.
type Progress func(done, total int64)

// progressCounter adds up done units for a Progress; a nil counter or one without a Progress
// counts nothing.
type progressCounter struct {
	p           Progress
	done, total int64
}

func (pc *progressCounter) add(n int64) {
	if pc == nil || pc.p == nil {
		return
	}
	pc.done += n
	pc.p(min(pc.done, max(pc.total, pc.done)), max(pc.total, pc.done))
}
