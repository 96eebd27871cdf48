module github.com/tmigr/tmigr

go 1.26.0

require (
	github.com/cockroachdb/datadriven v1.0.3
	golang.org/x/sys v0.50.0
	pgregory.net/rapid v1.3.0
)

require github.com/pmezard/go-difflib v1.0.0 // indirect
