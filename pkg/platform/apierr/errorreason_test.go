package apierr_test

import (
	"os"
	"regexp"
	"testing"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/platform/apierr"
)

// TestErrorReasonEnumIsTheCatalogue: the proto enum fitness.v1.ErrorReason
// (proto/fitness/v1/errors.proto), the typed reason the clients expose, names
// exactly the catalogue's reasons, both ways, besides its zero value; and
// each value's comment starts with the code and retry the catalogue gives it.
func TestErrorReasonEnumIsTheCatalogue(t *testing.T) {
	values := fitnessv1.ErrorReason(0).Descriptor().Values()
	if values.Get(0).Number() != 0 || values.Get(0).Name() != "ERROR_REASON_UNSPECIFIED" {
		t.Fatalf("ErrorReason's zero value is %s = %d, want ERROR_REASON_UNSPECIFIED = 0",
			values.Get(0).Name(), values.Get(0).Number())
	}
	inEnum := map[string]bool{}
	for i := 1; i < values.Len(); i++ {
		inEnum[string(values.Get(i).Name())] = true
	}
	inCatalogue := map[string]bool{}
	for _, e := range apierr.Catalogue {
		inCatalogue[string(e.Reason)] = true
		if !inEnum[string(e.Reason)] {
			t.Errorf("reason %s is in apierr.Catalogue but not in fitness.v1.ErrorReason", e.Reason)
		}
	}
	for name := range inEnum {
		if !inCatalogue[name] {
			t.Errorf("fitness.v1.ErrorReason value %s is not in apierr.Catalogue", name)
		}
	}

	src, err := os.ReadFile("../../../proto/fitness/v1/errors.proto")
	if err != nil {
		t.Fatal(err)
	}
	comment := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^  // (\w+), retry: ([a-z -]+)\.[^\n]*\n(?:  //[^\n]*\n)*  (\w+) = \d+;`).FindAllSubmatch(src, -1) {
		comment[string(m[3])] = string(m[1]) + ", retry: " + string(m[2])
	}
	for _, e := range apierr.Catalogue {
		if want := codeName(e.Code) + ", retry: " + e.Retry; comment[string(e.Reason)] != want {
			t.Errorf("errors.proto's comment of %s starts %q, want %q", e.Reason, comment[string(e.Reason)], want)
		}
	}
}
