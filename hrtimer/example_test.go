package hrtimer_test

import (
	"fmt"

	"github.com/tmigr/tmigr/hrtimer"
)

// A PREEMPT_RT CPU with a cyclictest thread (SCHED_FIFO) and a stress thread
// (SCHED_OTHER) asleep until the same instant. The RT task's sleeper is
// hard and is woken by the interrupt; the other is soft and waits for the
// softirq, which the interrupt raises once its hard expiry has come.
func Example() {
	cpu, err := hrtimer.NewCPUBase(0, hrtimer.Config{PreemptRT: true})
	if err != nil {
		panic(err)
	}
	sleepers := []struct {
		name   string
		policy hrtimer.Policy
	}{{"stress", hrtimer.SchedOther}, {"cyclictest", hrtimer.SchedFIFO}}
	for _, s := range sleepers {
		t := &hrtimer.Timer{Data: s.name}
		cpu.SetupSleeper(t, hrtimer.Monotonic, hrtimer.ModeAbs, s.policy)
		slack := hrtimer.SleeperSlack(s.policy, hrtimer.DefaultTimerSlack)
		eff, _ := cpu.Start(t, 0, 1_000_000, slack, t.SleeperStartMode(hrtimer.ModeAbs))
		fmt.Printf("%s: soft=%v, device programmed=%v at %d\n", s.name, t.IsSoft(), eff.Program, eff.At)
	}

	// run drives one pass to its end; the driver's "callback" wakes a task.
	run := func(p *hrtimer.Pass, now int64, ctx string) hrtimer.Outcome {
		for {
			for t := p.Next(); t != nil; t = p.Next() {
				fmt.Printf("%s at %d: wake %s\n", ctx, now, t.Data)
				now += 2_000 // each wakeup costs 2 µs
				p.Done(t, hrtimer.NoRestart)
			}
			out, err := p.End(now)
			if err != nil {
				panic(err)
			}
			if !out.Retry {
				return out
			}
		}
	}

	p, _ := cpu.Interrupt(1_000_000) // the device fires
	out := run(p, 1_000_000, "hardirq")
	fmt.Println("next interrupt at", out.At, "softirq raised:", cpu.SoftirqActivated())

	now := out.At
	p, _ = cpu.Interrupt(now)
	run(p, now, "hardirq")
	fmt.Println("softirq raised:", cpu.SoftirqActivated())
	sp, _ := cpu.Softirq(now + 1_000) // ktimers/0 gets the CPU a little later
	run(sp, now+1_000, "softirq")
	fmt.Println("next interrupt at", cpu.ExpiresNext())

	// Output:
	// stress: soft=true, device programmed=true at 1050000
	// cyclictest: soft=false, device programmed=true at 1000000
	// hardirq at 1000000: wake cyclictest
	// next interrupt at 1050000 softirq raised: false
	// softirq raised: true
	// softirq at 1051000: wake stress
	// next interrupt at 9223372036854775807
}
