package app

// AfterApply makes the old --json mean --format json (kong calls it after
// parsing status).
func (s *StatusCmd) AfterApply() error {
	if s.JSON {
		s.Format = "json"
	}
	s.JSON = s.Format == "json"
	return nil
}
