package ibus

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/godbus/dbus/v5"
)

// enginePath is the one engine object the factory makes.
const enginePath = dbus.ObjectPath("/org/freedesktop/IBus/Engine/yazses")

// engineState is what the daemon told the engine.
type engineState struct {
	created        bool
	focused        bool
	client         string // FocusInId's client ("fake": no text field)
	purpose, hints uint32
	caps           uint32
	surrounding    string
	cursor         uint32
	surroundingGen int
}

func (s engineState) beforeCursor() string {
	r := []rune(s.surrounding)
	if int(s.cursor) <= len(r) {
		r = r[:s.cursor]
	}
	return string(r)
}

// engine is the exported factory and engine. Its state is kept by
// observe, which sees the daemon's calls in the order they came (godbus
// runs the exported methods each on a goroutine of its own, in no
// order): a call answered after them finds them all applied.
type engine struct {
	log *slog.Logger
	mu  sync.Mutex
	st  engineState
	sig chan struct{} // closed and replaced on every change
}

func newEngine(log *slog.Logger) *engine { return &engine{log: log, sig: make(chan struct{})} }

func (e *engine) state() engineState {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.st
}

func (e *engine) changed() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.sig
}

// observe applies an incoming method call to the state.
func (e *engine) observe(msg *dbus.Message) {
	if msg.Type != dbus.TypeMethodCall {
		return
	}
	path, _ := msg.Headers[dbus.FieldPath].Value().(dbus.ObjectPath)
	member, _ := msg.Headers[dbus.FieldMember].Value().(string)
	iface, _ := msg.Headers[dbus.FieldInterface].Value().(string)
	if e.log != nil {
		e.log.Debug("ibus call", "path", string(path), "member", member)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	st := &e.st
	switch {
	case path == factoryPath && member == "CreateEngine":
		st.created = true
	case path != enginePath:
		return
	case member == "FocusIn":
		st.focused, st.client = true, ""
	case member == "FocusInId":
		st.focused, st.client = true, ""
		if len(msg.Body) == 2 {
			st.client, _ = msg.Body[1].(string)
		}
	case member == "FocusOut" || member == "FocusOutId" || member == "Disable" || member == "Destroy":
		st.focused = false
	case member == "SetCapabilities" && len(msg.Body) == 1:
		st.caps, _ = msg.Body[0].(uint32)
	case member == "SetContentType" && len(msg.Body) == 2:
		st.purpose, _ = msg.Body[0].(uint32)
		st.hints, _ = msg.Body[1].(uint32)
	case iface == propsIface && member == "Set" && len(msg.Body) == 3:
		if name, _ := msg.Body[1].(string); name == "ContentType" {
			if v, ok := msg.Body[2].(dbus.Variant); ok {
				if p, h, ok := contentType(v); ok {
					st.purpose, st.hints = p, h
				}
			}
		}
	case member == "SetSurroundingText" && len(msg.Body) == 3:
		if v, ok := msg.Body[0].(dbus.Variant); ok {
			st.surrounding = textOf(v)
		}
		st.cursor, _ = msg.Body[1].(uint32)
		st.surroundingGen++
	default:
		return
	}
	close(e.sig)
	e.sig = make(chan struct{})
}

// contentType reads a ContentType value, (uu).
func contentType(v dbus.Variant) (purpose, hints uint32, ok bool) {
	f, isSlice := v.Value().([]any)
	if !isSlice || len(f) != 2 {
		return 0, 0, false
	}
	p, ok1 := f[0].(uint32)
	h, ok2 := f[1].(uint32)
	return p, h, ok1 && ok2
}

// textOf reads the text of a serialized IBusText, (sa{sv}sv).
func textOf(v dbus.Variant) string {
	f, ok := v.Value().([]any)
	if !ok || len(f) < 3 {
		return ""
	}
	s, _ := f[2].(string)
	return s
}

// engineDescName reads the name of a serialized IBusEngineDesc,
// (sa{sv}ss…).
func engineDescName(v dbus.Variant) (string, error) {
	// The GlobalEngine property is a variant holding the serialized
	// description, itself a variant.
	for {
		inner, ok := v.Value().(dbus.Variant)
		if !ok {
			break
		}
		v = inner
	}
	f, ok := v.Value().([]any)
	if !ok || len(f) < 3 {
		return "", fmt.Errorf("an engine description of signature %s", v.Signature())
	}
	if kind, _ := f[0].(string); kind != "IBusEngineDesc" {
		return "", fmt.Errorf("an engine description of kind %q", kind)
	}
	name, ok := f[2].(string)
	if !ok {
		return "", errors.New("an engine description without a name")
	}
	return name, nil
}

// The daemon's calls, answered. Their effect on the state is observe's.
type factory struct{}

func (factory) CreateEngine(name string) (dbus.ObjectPath, *dbus.Error) {
	if name != EngineName {
		return "", dbus.NewError("org.freedesktop.DBus.Error.Failed", []any{"no such engine"})
	}
	return enginePath, nil
}

type engineMethods struct{}

func (engineMethods) ProcessKeyEvent(keyval, keycode, state uint32) (bool, *dbus.Error) {
	// Keys go on to the field as they came.
	return false, nil
}
func (engineMethods) SetCursorLocation(x, y, w, h int32) *dbus.Error         { return nil }
func (engineMethods) ProcessHandWritingEvent(c []float64) *dbus.Error        { return nil }
func (engineMethods) CancelHandWriting(n uint32) *dbus.Error                 { return nil }
func (engineMethods) SetCapabilities(caps uint32) *dbus.Error                { return nil }
func (engineMethods) PropertyActivate(name string, state uint32) *dbus.Error { return nil }
func (engineMethods) PropertyShow(name string) *dbus.Error                   { return nil }
func (engineMethods) PropertyHide(name string) *dbus.Error                   { return nil }
func (engineMethods) CandidateClicked(index, button, state uint32) *dbus.Error {
	return nil
}
func (engineMethods) FocusIn() *dbus.Error                                       { return nil }
func (engineMethods) FocusInId(path, client string) *dbus.Error                  { return nil }
func (engineMethods) FocusOut() *dbus.Error                                      { return nil }
func (engineMethods) FocusOutId(path string) *dbus.Error                         { return nil }
func (engineMethods) Reset() *dbus.Error                                         { return nil }
func (engineMethods) Enable() *dbus.Error                                        { return nil }
func (engineMethods) Disable() *dbus.Error                                       { return nil }
func (engineMethods) PageUp() *dbus.Error                                        { return nil }
func (engineMethods) PageDown() *dbus.Error                                      { return nil }
func (engineMethods) CursorUp() *dbus.Error                                      { return nil }
func (engineMethods) CursorDown() *dbus.Error                                    { return nil }
func (engineMethods) SetContentType(purpose, hints uint32) *dbus.Error           { return nil }
func (engineMethods) SetSurroundingText(t dbus.Variant, c, a uint32) *dbus.Error { return nil }
func (engineMethods) PanelExtensionReceived(v dbus.Variant) *dbus.Error          { return nil }
func (engineMethods) PanelExtensionRegisterKeys(v dbus.Variant) *dbus.Error      { return nil }

type serviceMethods struct{}

func (serviceMethods) Destroy() *dbus.Error { return nil }

// properties serves the engine's D-Bus properties: FocusId (true: the
// daemon sends FocusInId with the kind of client), NeedsSurroundingText
// (true), ContentType (write only).
type properties struct{}

func (properties) Get(iface, name string) (dbus.Variant, *dbus.Error) {
	if iface == engineIface {
		switch name {
		case "FocusId", "NeedsSurroundingText":
			return dbus.MakeVariant(true), nil
		}
	}
	return dbus.Variant{}, dbus.NewError("org.freedesktop.DBus.Error.UnknownProperty", []any{name})
}

func (properties) GetAll(iface string) (map[string]dbus.Variant, *dbus.Error) {
	if iface != engineIface {
		return map[string]dbus.Variant{}, nil
	}
	return map[string]dbus.Variant{
		"FocusId":              dbus.MakeVariant(true),
		"NeedsSurroundingText": dbus.MakeVariant(true),
	}, nil
}

func (properties) Set(iface, name string, v dbus.Variant) *dbus.Error { return nil }

// export serves the factory and the engine on conn.
func (e *engine) export(conn *dbus.Conn) error {
	for _, x := range []struct {
		v     any
		path  dbus.ObjectPath
		iface string
	}{
		{factory{}, factoryPath, factoryIface},
		{serviceMethods{}, factoryPath, serviceIface},
		{engineMethods{}, enginePath, engineIface},
		{serviceMethods{}, enginePath, serviceIface},
		{properties{}, enginePath, propsIface},
	} {
		if err := conn.Export(x.v, x.path, x.iface); err != nil {
			return err
		}
	}
	return nil
}

// ibusText is IBusText's serialization, (sa{sv}sv): the kind, the
// attachments, the text and its attributes (an IBusAttrList).
type ibusText struct {
	Kind   string
	Attach map[string]dbus.Variant
	Text   string
	Attrs  dbus.Variant
}

// attrList is IBusAttrList's serialization, (sa{sv}av).
type attrList struct {
	Kind   string
	Attach map[string]dbus.Variant
	Attrs  []dbus.Variant
}

func newText(s string) ibusText {
	return ibusText{
		Kind:   "IBusText",
		Attach: map[string]dbus.Variant{},
		Text:   s,
		Attrs:  dbus.MakeVariant(attrList{Kind: "IBusAttrList", Attach: map[string]dbus.Variant{}, Attrs: []dbus.Variant{}}),
	}
}

// engineDesc is IBusEngineDesc's serialization (src/ibusenginedesc.c):
// (sa{sv} name longname description language license author icon layout
// u:rank hotkeys symbol setup layout_variant layout_option version
// textdomain icon_prop_key).
type engineDesc struct {
	Kind                                                         string
	Attach                                                       map[string]dbus.Variant
	Name, Longname, Description, Language, License, Author, Icon string
	Layout                                                       string
	Rank                                                         uint32
	Hotkeys, Symbol, Setup, LayoutVariant, LayoutOption          string
	Version, Textdomain, IconPropKey                             string
}

// componentDesc is IBusComponent's serialization (src/ibuscomponent.c):
// (sa{sv} name description version license author homepage exec
// textdomain av:observed_paths av:engines).
type componentDesc struct {
	Kind                                                  string
	Attach                                                map[string]dbus.Variant
	Name, Description, Version, License, Author, Homepage string
	Exec, Textdomain                                      string
	ObservedPaths, Engines                                []dbus.Variant
}

func component() componentDesc {
	return componentDesc{
		Kind: "IBusComponent", Attach: map[string]dbus.Variant{},
		Name: componentName, Description: "YazSes dictation", Version: "1",
		License: "", Author: "YazSes", Homepage: "", Exec: "", Textdomain: "",
		ObservedPaths: []dbus.Variant{},
		Engines: []dbus.Variant{dbus.MakeVariant(engineDesc{
			Kind: "IBusEngineDesc", Attach: map[string]dbus.Variant{},
			Name: EngineName, Longname: "YazSes dictation", Description: "Text dictated to YazSes",
			Language: "other", License: "", Author: "YazSes", Icon: "", Layout: "default",
			Symbol: "Y",
		})},
	}
}
