module github.com/sluicehq/sluice/sdk/go

go 1.26.0

require (
	github.com/sluicehq/sluice/abi v0.0.0-00010101000000-000000000000
	pgregory.net/rapid v1.3.0
)

replace github.com/sluicehq/sluice/abi => ../../abi
