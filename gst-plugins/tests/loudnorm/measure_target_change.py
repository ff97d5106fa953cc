#!/usr/bin/python3
# A measurement, not a meson test (needs python3-gi, which the meson python may lack):
#   GST_PLUGIN_PATH=gst-plugins/build /usr/bin/python3 gst-plugins/tests/loudnorm/measure_target_change.py label
# loudnorm on a steady 1 kHz tone (-20 LUFS in), target -23 for 20 s, then -16: output short-term
# loudness from the element's own messages, seconds after the change.
import sys, gi
gi.require_version('Gst', '1.0')
from gi.repository import Gst
Gst.init(None)
secs = 140
p = Gst.parse_launch(f'audiotestsrc wave=sine freq=1000 volume=0.1 samplesperbuffer=480 num-buffers={secs*100} '
                     '! audio/x-raw,format=F32LE,rate=48000,channels=2 ! loudnorm name=ln target=-23 interval=1000000000 ! fakesink sync=false')
ln = p.get_by_name('ln')
done = {'set': False}
def probe(pad, info):
    b = info.get_buffer()
    if not done['set'] and b.pts >= 20 * Gst.SECOND:
        ln.set_property('target', -16.0)
        done['set'] = True
    return Gst.PadProbeReturn.OK
ln.get_static_pad('sink').add_probe(Gst.PadProbeType.BUFFER, probe)
bus = p.get_bus()
p.set_state(Gst.State.PLAYING)
out = {}
while True:
    m = bus.timed_pop_filtered(10 * Gst.SECOND, Gst.MessageType.ELEMENT | Gst.MessageType.EOS | Gst.MessageType.ERROR)
    if m is None or m.type != Gst.MessageType.ELEMENT:
        break
    s = m.get_structure()
    if s.get_name() == 'loudnorm':
        t = (s.get_value('timestamp') + s.get_value('duration')) / 1e9
        out[round(t)] = (s.get_value('output-short-term'), s.get_value('gain'))
p.set_state(Gst.State.NULL)
print(sys.argv[1], ' '.join(f'{t-20}s:{out[t][0]:.2f}' for t in (25, 28, 30, 33, 35, 40, 50, 60, 80, 100, 120, 139) if t in out))
