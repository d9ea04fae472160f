// Package wlwire is the Wayland wire format, as both ends of a connection
// write and read it: yaz-type's Wayland client
// (cmd/yaz-type/internal/wayland) and the compositors of the tests
// (internal/testwl, and that package's own fake). A message is
// little-endian 32-bit words: the object id, then the size in bytes
// (header included) << 16 | the opcode, then the arguments (uint and int
// one word; a string its length with the NUL, then the bytes padded to a
// word; object and new_id one word; an untyped new_id, as in
// wl_registry.bind, the interface string, the version and the id). A file
// descriptor goes beside the message as SCM_RIGHTS ancillary data, and
// the messages that carry one take them in the order they came. The names
// are wayland.xml's.
package wlwire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// Object ids, opcodes and values of wayland.xml.
const (
	DisplayID = 1 // wl_display is object 1 on every connection

	// wl_display requests and events.
	DisplaySync        = 0
	DisplayGetRegistry = 1
	DisplayError       = 0 // event
	DisplayDeleteID    = 1 // event

	// wl_registry.
	RegistryBind         = 0
	RegistryGlobal       = 0 // event
	RegistryGlobalRemove = 1 // event

	// wl_callback.
	CallbackDone = 0 // event

	// wl_seat, its capabilities and wl_keyboard.
	SeatGetKeyboard   = 1
	SeatCapabilities  = 0 // event
	SeatCapKeyboard   = 2
	KeyboardKeymap    = 0 // event
	KeymapFormatXKBV1 = 1 // wl_keyboard.keymap_format.xkb_v1

	SeatInterface = "wl_seat"

	MaxMessage = 4096 // libwayland's largest message
	MaxFds     = 28   // libwayland's MAX_FDS_OUT: the most beside one message
)

// Msg builds one message.
type Msg struct {
	b []byte
	// FD is the file descriptor that goes beside the message (-1: none).
	FD int
}

// NewMsg starts a message to (a request) or from (an event) object obj.
func NewMsg(obj, opcode uint32) *Msg {
	m := &Msg{b: make([]byte, 8, 32), FD: -1}
	binary.LittleEndian.PutUint32(m.b, obj)
	binary.LittleEndian.PutUint32(m.b[4:], opcode)
	return m
}

// Uint adds a uint, int, object or new_id argument.
func (m *Msg) Uint(v uint32) *Msg {
	m.b = binary.LittleEndian.AppendUint32(m.b, v)
	return m
}

// Str adds a string argument.
func (m *Msg) Str(s string) *Msg {
	m.Uint(uint32(len(s) + 1))
	m.b = append(m.b, s...)
	m.b = append(m.b, 0)
	for len(m.b)%4 != 0 {
		m.b = append(m.b, 0)
	}
	return m
}

// Bytes sets the size in the header and returns the message.
func (m *Msg) Bytes() []byte {
	op := binary.LittleEndian.Uint32(m.b[4:]) & 0xffff
	binary.LittleEndian.PutUint32(m.b[4:], uint32(len(m.b))<<16|op)
	return m.b
}

// Args reads the arguments of one message. An argument the message is
// too short for reads as zero and makes it Bad.
type Args struct {
	b   []byte
	bad bool
}

// Uint reads a uint, int, object or new_id argument.
func (a *Args) Uint() uint32 {
	if len(a.b) < 4 {
		a.bad = true
		return 0
	}
	v := binary.LittleEndian.Uint32(a.b)
	a.b = a.b[4:]
	return v
}

// Str reads a string argument.
func (a *Args) Str() string {
	n := int(a.Uint())
	padded := (n + 3) &^ 3
	if a.bad || n < 1 || padded > len(a.b) {
		a.bad = true
		return ""
	}
	s := string(a.b[:n-1])
	a.b = a.b[padded:]
	return s
}

// Bad reports whether an argument read was not in the message.
func (a *Args) Bad() bool { return a.bad }

// ErrMalformed: a message's header gives a size that no message has.
var ErrMalformed = errors.New("a malformed message")

// Reader reads the messages of one connection, and keeps the file
// descriptors that come beside them until a message takes them
// ([Reader.TakeFd]) or the reader is closed. One goroutine uses it.
type Reader struct {
	conn       *net.UnixConn
	buf        []byte // received; from off on, not yet returned
	off        int
	chunk, oob []byte
	fds        []int
	err        error // the read's error, returned once buf has no whole message
}

// NewReader reads conn.
func NewReader(conn *net.UnixConn) *Reader {
	return &Reader{conn: conn, buf: make([]byte, 0, 2*MaxMessage), chunk: make([]byte, MaxMessage),
		oob: make([]byte, unix.CmsgSpace(MaxFds*4))}
}

// Next returns the next message: its object, its opcode and its
// arguments, which stay valid until the next call. The messages received
// before a read failed come first, then the read's error;
// [ErrMalformed] ends the connection's messages.
func (r *Reader) Next() (obj, opcode uint32, a *Args, err error) {
	for {
		rest := r.buf[r.off:]
		if len(rest) >= 8 {
			obj, word := binary.LittleEndian.Uint32(rest), binary.LittleEndian.Uint32(rest[4:])
			size := int(word >> 16)
			if size < 8 || size%4 != 0 {
				r.err = ErrMalformed
				return 0, 0, nil, r.err
			}
			if len(rest) >= size {
				r.off += size
				return obj, word & 0xffff, &Args{b: rest[8:size]}, nil
			}
		}
		if r.err != nil {
			return 0, 0, nil, r.err
		}
		r.buf, r.off = append(r.buf[:0], rest...), 0
		n, oobn, _, _, err := r.conn.ReadMsgUnix(r.chunk, r.oob)
		r.fds = append(r.fds, rights(r.oob[:max(oobn, 0)])...)
		r.buf = append(r.buf, r.chunk[:max(n, 0)]...)
		r.err = err
	}
}

// TakeFd takes the first file descriptor received and not yet taken (-1:
// none); the caller closes it.
func (r *Reader) TakeFd() int {
	if len(r.fds) == 0 {
		return -1
	}
	fd := r.fds[0]
	r.fds = r.fds[1:]
	return fd
}

// Close closes the file descriptors no message took. The connection is
// the caller's.
func (r *Reader) Close() {
	for _, fd := range r.fds {
		unix.Close(fd)
	}
	r.fds = nil
}

// rights returns the file descriptors of SCM_RIGHTS ancillary data.
func rights(oob []byte) []int {
	if len(oob) == 0 {
		return nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var out []int
	for _, m := range msgs {
		fds, err := unix.ParseUnixRights(&m)
		if err == nil {
			out = append(out, fds...)
		}
	}
	return out
}

// Send writes messages (b, one or more) with fd beside them (-1: none):
// the fd goes with the first byte, and what one write did not take goes
// in another.
func Send(conn *net.UnixConn, b []byte, fd int) error {
	var oob []byte
	if fd >= 0 {
		oob = unix.UnixRights(fd)
	}
	n, oobn, err := conn.WriteMsgUnix(b, oob, nil)
	if err == nil && n < len(b) {
		_, err = conn.Write(b[n:])
	}
	if err == nil && oobn < len(oob) {
		err = errors.New("the file descriptor was not sent")
	}
	return err
}

// KeymapFile puts an XKB keymap (and the NUL that xkbcommon reads up to)
// in a sealed memfd, as a keymap goes over the wire (wl_keyboard.keymap,
// zwp_virtual_keyboard_v1.keymap: the fd and this size), and returns it
// with its size. The caller closes it.
func KeymapFile(keymap string) (fd int, size uint32, err error) {
	fd, err = unix.MemfdCreate("yazses-keymap", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return -1, 0, fmt.Errorf("memfd_create: %w", err)
	}
	data := append([]byte(keymap), 0)
	for off := 0; off < len(data); {
		n, err := unix.Write(fd, data[off:])
		if err != nil {
			unix.Close(fd)
			return -1, 0, fmt.Errorf("write keymap: %w", err)
		}
		off += n
	}
	seals := unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE | unix.F_SEAL_SEAL
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
		unix.Close(fd)
		return -1, 0, fmt.Errorf("seal keymap: %w", err)
	}
	return fd, uint32(len(data)), nil
}
