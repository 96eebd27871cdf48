module github.com/tmigr/tmigr/bench

go 1.26.0

replace github.com/tmigr/tmigr => ../

require (
	github.com/RussellLuo/timingwheel v0.0.0-20220218152713-54845bda3108
	github.com/antlabs/timer v0.1.4
	github.com/tmigr/tmigr v0.0.0-00010101000000-000000000000
)

require (
	github.com/antlabs/stl v0.0.2 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
