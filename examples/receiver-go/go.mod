module github.com/payhooks/payhooks/examples/receiver-go

go 1.19

require (
	github.com/lib/pq v1.10.7
	github.com/payhooks/payhooks/sdks/go v0.1.0
)
