// Package bcast is the daemon's one broadcast of a change: a waiter takes
// a channel that is closed at the next Broadcast, then looks again at
// whatever changed. It replaces the hand-made "close the channel and make
// a new one" of each piece of state that others wait on.
package bcast

import "sync"

// Signal announces changes. The zero value is ready; a Signal must not be
// copied after first use.
type Signal struct {
	mu sync.Mutex
	ch chan struct{}
}

// C returns a channel closed at the next Broadcast. Read the state it
// guards after taking the channel, so that no change between the two is
// missed.
func (s *Signal) C() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// Broadcast wakes every waiter on the channels C has returned so far.
func (s *Signal) Broadcast() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}
