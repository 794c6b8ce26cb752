package repair

import "testing"

// Both vocabularies of rebuild phases map to the API's, and a rebuild that
// started switching never looks cancellable again.
func TestNormalizePhase(t *testing.T) {
	for _, tc := range []struct {
		reported, previous, want string
	}{
		{PhaseBuilding, "", PhaseBuilding},
		{"scan", "", PhaseBuilding},
		{"catch-up", PhaseBuilding, PhaseCatchingUp},
		{"verify-staging", PhaseCatchingUp, PhaseVerifying},
		{"switch", PhaseVerifying, PhaseSwitching},
		{"verify", PhaseSwitching, PhaseSwitching},
		{"rollback", PhaseSwitching, PhaseSwitching},
		{"retire", PhaseSwitching, PhaseSwitching},
		{"done", PhaseSwitching, PhaseSwitched},
		{PhaseBuilding, PhaseSwitching, PhaseSwitching},
		{"something new", PhaseCatchingUp, PhaseCatchingUp},
	} {
		t.Run(tc.reported+" after "+tc.previous, func(t *testing.T) {
			if got := normalizePhase(tc.reported, tc.previous); got != tc.want {
				t.Errorf("normalizePhase(%q, %q) = %q, want %q", tc.reported, tc.previous, got, tc.want)
			}
		})
	}
}
