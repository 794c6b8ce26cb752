package pulsarbus_test

import "github.com/resultsync/resultsync/pkg/pulsarbus"

func pulsarTopic() string { return pulsarbus.Topic("public", "default", "fitness-results") }
