module github.com/resultsync/resultsync/clients/go

go 1.26.8

require (
	github.com/resultsync/resultsync/gen v0.0.0-00010101000000-000000000000
	google.golang.org/genproto/googleapis/rpc v0.0.0-20261104224025-d1e00e9f33ab
	google.golang.org/grpc v1.85.0
	google.golang.org/protobuf v1.36.13-0.20261016172727-e9ee2a76ab8e
)

require (
	github.com/grpc-ecosystem/grpc-gateway/v2 v2.34.0 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.44.0 // indirect
	google.golang.org/genproto/googleapis/api v0.0.0-20261110000943-09e21b237f2c // indirect
)

// In this repository the client builds against the generated code beside
// it; outside, remove this line and require a tagged gen version.
replace github.com/resultsync/resultsync/gen => ../../gen
