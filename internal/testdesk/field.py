# field.py: a GTK window with one entry, for the tests of a typing route.
# It prints one JSON line on stdout per event, flushed at once:
#   {"ev": "ready"}                 the window is shown
#   {"ev": "active", "on": true}    the window got (or lost) the focus
#   {"ev": "text", "text": "..."}   the entry's text changed (the whole text)
#   {"ev": "preedit", "text": "..."} the input method's tentative text changed
# Arguments: the GTK major version (3 or 4), "password" or "text".
# Commands on stdin, one a line: "purpose password", "purpose text" (the
# entry's input purpose; the field answers {"ev": "purpose", "text": ...}).
# The field ends when its stdin ends.
import json
import sys

import gi

major = sys.argv[1]
purpose = sys.argv[2]
gi.require_version("Gtk", major + ".0")
from gi.repository import GLib, Gtk  # noqa: E402


def emit(**kw):
    sys.stdout.write(json.dumps(kw, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def on_text(entry, *_):
    emit(ev="text", text=entry.get_text())


def on_preedit(_, text):
    emit(ev="preedit", text=text)


def on_active(win, *_):
    emit(ev="active", on=bool(win.is_active() if major == "4" else win.props.is_active))


def setup(win):
    entry = Gtk.Entry()
    if purpose == "password":
        entry.set_input_purpose(Gtk.InputPurpose.PASSWORD)
        entry.set_visibility(False)
    entry.connect("changed", on_text)
    if major == "4":
        entry.get_delegate().connect("preedit-changed", on_preedit)
        win.set_child(entry)
    else:
        entry.connect("preedit-changed", on_preedit)
        win.add(entry)
    win.set_title("yazses-field")
    win.connect("notify::is-active", on_active)
    if major == "4":
        focus = Gtk.EventControllerFocus()
        focus.connect("enter", lambda *_: emit(ev="focus", on=True))
        focus.connect("leave", lambda *_: emit(ev="focus", on=False))
        entry.get_delegate().add_controller(focus)
    else:
        entry.connect("focus-in-event", lambda *_: emit(ev="focus", on=True) or False)
        entry.connect("focus-out-event", lambda *_: emit(ev="focus", on=False) or False)
    return entry


win = Gtk.Window()
entry = setup(win)
loop = GLib.MainLoop()
if major == "4":
    win.connect("close-request", lambda *_: loop.quit() or False)
    win.present()
else:
    win.connect("destroy", lambda *_: loop.quit())
    win.show_all()
    win.present()
entry.grab_focus()


def on_stdin(channel, cond):
    if cond & (GLib.IO_HUP | GLib.IO_ERR):
        loop.quit()
        return False
    line = channel.readline()
    if line == "":
        loop.quit()
        return False
    cmd = line.split()
    if cmd[:1] == ["purpose"] and len(cmd) == 2:
        password = cmd[1] == "password"
        entry.set_input_purpose(Gtk.InputPurpose.PASSWORD if password else Gtk.InputPurpose.FREE_FORM)
        entry.set_visibility(not password)
        emit(ev="purpose", text=cmd[1])
    return True


stdin = GLib.IOChannel.unix_new(0)
GLib.io_add_watch(stdin, GLib.PRIORITY_DEFAULT, GLib.IO_IN | GLib.IO_HUP | GLib.IO_ERR, on_stdin)
GLib.idle_add(lambda: emit(ev="ready", on=bool(win.is_active() if major == "4" else win.props.is_active)) and False)
loop.run()
