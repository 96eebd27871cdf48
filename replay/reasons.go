package replay

import "strconv"

// reason is why a part of the model's state may not be the kernel's, and
// so why a decision that reads it is undetermined; known (the zero value)
// where it is the kernel's. Each reason's text, what
// Counts.UndeterminedReasons counts and the user reads, is a why constant
// beside the code that gives it.
type reason uint8

const (
	known reason = iota

	// The tmigr check (tmigr.go).
	reasonBefore
	reasonFirst
	reasonEvent
	reasonWakeup
	reasonOpaque
	reasonNow
	reasonNoClock
	reasonRefetch
	reasonLost
	reasonMissing
	reasonRace
	reasonPartial
	reasonDiverged
	reasonOrder
	reasonClaim
	reasonClaimRead
	reasonOffline
	reasonMigrator
	reasonUndescribed
	reasonUndeclared
	reasonIgnoreLate
	reasonLate

	// The wheel check (wheel.go).
	reasonEarlyNext
	reasonHeldBack
	reasonEmptyPass
	reasonRanBefore
	reasonJiffiesMoved

	// The nextevt check (nextevt.go).
	reasonTimeBase
	reasonPendingBeyond
	reasonDueBefore
	reasonArmedBefore
	reasonStartMissing
	reasonLeftUnseen

	// The hrtimer check (hrtimer.go).
	reasonTwoCPUs
	reasonMode
	reasonPolicy
	reasonNoStartMode
	reasonStartedBefore
	reasonNoContext
	reasonMovedSleeper

	// The placement check (placement.go).
	reasonPushTarget
	reasonSysctl
	reasonFinishing
	reasonAddTimerOn
	reasonPinnedRunning
	reasonHotplug

	numReasons
)

var reasonTexts = [numReasons]string{
	known:               "known",
	reasonBefore:        whyBefore,
	reasonFirst:         whyFirst,
	reasonEvent:         whyEvent,
	reasonWakeup:        whyWakeup,
	reasonOpaque:        whyOpaque,
	reasonNow:           whyNow,
	reasonNoClock:       whyNoClock,
	reasonRefetch:       whyRefetch,
	reasonLost:          whyLost,
	reasonMissing:       whyMissing,
	reasonRace:          whyRace,
	reasonPartial:       whyPartial,
	reasonDiverged:      whyDiverged,
	reasonOrder:         whyOrder,
	reasonClaim:         whyClaim,
	reasonClaimRead:     whyClaimRead,
	reasonOffline:       whyOffline,
	reasonMigrator:      whyMigrator,
	reasonUndescribed:   whyUndescribed,
	reasonUndeclared:    whyUndeclared,
	reasonIgnoreLate:    whyIgnoreLate,
	reasonLate:          whyLate,
	reasonEarlyNext:     whyEarlyNext,
	reasonHeldBack:      whyHeldBack,
	reasonEmptyPass:     whyEmptyPass,
	reasonRanBefore:     whyRanBefore,
	reasonJiffiesMoved:  whyJiffiesMoved,
	reasonTimeBase:      whyTimeBase,
	reasonPendingBeyond: whyPendingBeyond,
	reasonDueBefore:     whyDueBefore,
	reasonArmedBefore:   whyArmedBefore,
	reasonStartMissing:  whyStartMissing,
	reasonLeftUnseen:    whyLeftUnseen,
	reasonTwoCPUs:       whyTwoCPUs,
	reasonMode:          whyMode,
	reasonPolicy:        whyPolicy,
	reasonNoStartMode:   whyNoStartMode,
	reasonStartedBefore: whyStartedBefore,
	reasonNoContext:     whyNoContext,
	reasonMovedSleeper:  whyMovedSleeper,
	reasonPushTarget:    whyPushTarget,
	reasonSysctl:        whySysctl,
	reasonFinishing:     whyFinishing,
	reasonAddTimerOn:    whyAddTimerOn,
	reasonPinnedRunning: whyPinnedRunning,
	reasonHotplug:       whyHotplug,
}

// String returns the reason's text.
func (w reason) String() string {
	if w < numReasons {
		return reasonTexts[w]
	}
	return "reason(" + strconv.Itoa(int(w)) + ")"
}

// first returns the first of whys that is not known, or known.
func first(whys ...reason) reason {
	for _, w := range whys {
		if w != known {
			return w
		}
	}
	return known
}
