package checkpoint

import (
	"math"
	"sync"
	"time"
)

// ScheduleOptions configure a Schedule.
type ScheduleOptions struct {
	// MTBF is the expected time between interruptions (required; e.g.
	// 1/rate from the pricing package's interruption data).
	MTBF time.Duration
	// Min and Max clamp the interval. Defaults 1 minute and 1 hour.
	Min, Max time.Duration
	// InitialCost is the assumed save cost before any Record. Default 30s.
	InitialCost time.Duration
	// Window is how many recent save costs are averaged. Default 5.
	Window int
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Schedule says when to checkpoint, following Young/Daly: the interval is
// sqrt(2*C*MTBF), C the mean cost of the recent saves, clamped to
// [Min, Max]. It is safe for concurrent use.
type Schedule struct {
	o     ScheduleOptions
	mu    sync.Mutex
	costs []time.Duration
	last  time.Time
}

// NewSchedule returns a schedule whose first checkpoint is due one
// interval after now.
func NewSchedule(opts *ScheduleOptions) *Schedule {
	var o ScheduleOptions
	if opts != nil {
		o = *opts
	}
	if o.Min <= 0 {
		o.Min = time.Minute
	}
	if o.Max <= 0 {
		o.Max = time.Hour
	}
	if o.Max < o.Min {
		o.Max = o.Min
	}
	if o.InitialCost <= 0 {
		o.InitialCost = 30 * time.Second
	}
	if o.Window <= 0 {
		o.Window = 5
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Schedule{o: o, last: o.Now()}
}

// YoungDaly returns sqrt(2*cost*mtbf) (not clamped).
func YoungDaly(cost, mtbf time.Duration) time.Duration {
	if cost <= 0 || mtbf <= 0 {
		return 0
	}
	return time.Duration(math.Sqrt(2*cost.Seconds()*mtbf.Seconds()) * float64(time.Second))
}

// Cost is the mean of the recent recorded save costs (InitialCost before any).
func (s *Schedule) Cost() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cost()
}

func (s *Schedule) cost() time.Duration {
	if len(s.costs) == 0 {
		return s.o.InitialCost
	}
	var sum time.Duration
	for _, c := range s.costs {
		sum += c
	}
	return sum / time.Duration(len(s.costs))
}

// Interval is the current checkpoint interval.
func (s *Schedule) Interval() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.interval()
}

func (s *Schedule) interval() time.Duration {
	iv := YoungDaly(s.cost(), s.o.MTBF)
	if s.o.MTBF <= 0 {
		iv = s.o.Max
	}
	return min(max(iv, s.o.Min), s.o.Max)
}

// Due reports whether a checkpoint is due at now.
func (s *Schedule) Due(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !now.Before(s.last.Add(s.interval()))
}

// Next is when the next checkpoint is due.
func (s *Schedule) Next() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last.Add(s.interval())
}

// Record notes that a checkpoint finished now and cost d (the time the
// job could not train because of it).
func (s *Schedule) Record(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = s.o.Now()
	if d > 0 {
		s.costs = append(s.costs, d)
		if len(s.costs) > s.o.Window {
			s.costs = s.costs[len(s.costs)-s.o.Window:]
		}
	}
}
