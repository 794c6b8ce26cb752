package repair_test

import (
	"testing"

	"github.com/resultsync/resultsync/pkg/testkit/platformtest"
)

// platform is the whole platform (pkg/testkit/platformtest) with the repair tests'
// own helpers.
type platform struct {
	*platformtest.Platform
	t *testing.T
}

func newPlatform(t *testing.T) *platform { return &platform{Platform: platformtest.New(t), t: t} }

// current is the projection's current state of a key.
type current = platformtest.Current

var (
	operator = platformtest.Operator
	alice    = platformtest.Alice
	bob      = platformtest.Bob
)
