/**
 * Stations end to end with real processes on loopback: the engine, its gst-launch-1.0 children,
 * ffmpeg as an SRT caller and as an Icecast source client, and an RTP receiver.
 */
import t from 'tap';
import type { StationView } from '../../src/stations/station.js';
import { api, startEngine } from '../helpers/engine-process.js';
import { RtpReceiver, sineRmsDbfs } from '../helpers/rtp-receiver.js';
import { sendSine } from '../helpers/srt-sender.js';
import { dashboardOf, freeStationNumber, harborPortOf, sendIcecast, stationToml, whenStation } from '../helpers/stations.js';

void t.test('an SRT station: its harbor port receives SRT audio that comes out as RTP at the level it went in', async (t) => {
  const number = await freeStationNumber();
  const receiver = await RtpReceiver.open();
  t.teardown(() => receiver.close());
  const engine = await startEngine(t, { extraToml: stationToml({ id: 'studio-srt', number, rtpPort: receiver.port }) });
  const running = await whenStation(engine, 'studio-srt', (s) => s.state === 'running', 'running');
  t.equal(running.harbor, 'srt');
  t.equal(running.harbor_port, harborPortOf(number), 'harbor port = 8100 + number - 1');
  t.equal(running.latency, 120);
  t.equal(running.enabled, true, 'autostart');
  t.equal(running.status, 'active');

  const amplitude = 0.5;
  receiver.reset(); // the output sends silence from the child's start: measure from the caller's start
  const sender = sendSine({ port: harborPortOf(number), amplitude, seconds: 4, codec: 'aac' });
  t.teardown(() => sender.stop());
  t.equal(await sender.done, 0, 'the SRT caller sent its audio to the harbor port');
  await new Promise((resolve) => setTimeout(resolve, 500));
  const stats = receiver.stats(1.5, 0.5);
  t.ok(stats.packets > 2500, `RTP packets arrived (${stats.packets})`);
  t.equal(stats.payloadType, 96);
  const expected = sineRmsDbfs(amplitude);
  for (const [channel, rms] of stats.rmsDbfs.entries()) {
    t.ok(Math.abs(rms - expected) < 0.5, `channel ${channel}: RMS ${rms.toFixed(2)} dBFS, sent ${expected.toFixed(2)} dBFS`);
  }

  const list = await api<{ stations: StationView[] }>(dashboardOf(engine), 'GET', '/api/stations');
  t.equal(list.status, 200);
  t.same(list.body.stations.map((s) => s.id), ['studio-srt']);
  const metrics = await api(engine, 'GET', '/api/v1/metrics');
  t.match(metrics.text, 'audio_engine_pipeline_up{pipeline_id="station:studio-srt"}', 'the station is in the metrics');
  t.ok(engine.logs.some((l) => l.station_id === 'studio-srt' && l.pipeline_id === 'station:studio-srt' && l.event === 'spawn'), 'log lines carry station_id');
});

void t.test('an Icecast station: ffmpeg as a source client (MP3, then Ogg) comes out as RTP at the right level', async (t) => {
  const number = await freeStationNumber();
  const port = harborPortOf(number);
  const password = 'hack me:1';
  const receiver = await RtpReceiver.open();
  t.teardown(() => receiver.close());
  const engine = await startEngine(t, {
    extraToml: stationToml({ id: 'studio-ice', number, rtpPort: receiver.port, harbor: 'icecast', password }),
  });
  const waiting = await whenStation(engine, 'studio-ice', (s) => s.pid !== null, 'a child waiting for a source');
  t.equal(waiting.harbor, 'icecast');
  t.equal(waiting.source, null);
  t.equal(waiting.input_state, 'waiting');
  t.notMatch(JSON.stringify(waiting), password, 'the password is never returned');

  const amplitude = 0.5;
  const source = sendIcecast({ port, password, amplitude, seconds: 5, codec: 'mp3' });
  t.teardown(() => source.stop());
  const live = await whenStation(engine, 'studio-ice', (s) => s.source !== null && s.state === 'running', 'the source connected');
  t.equal(live.source?.mount, '/live');
  t.equal(live.source?.content_type, 'audio/mpeg');

  // A second source while one is connected is refused (403 Mountpoint in use); a wrong password gets 401.
  const second = sendIcecast({ port, password, amplitude: 0.1, seconds: 2, codec: 'mp3' });
  t.teardown(() => second.stop());
  t.not(await second.done, 0, 'a second source is refused');
  t.match(second.stderr(), /403|Forbidden/, `ffmpeg reports the refusal: ${second.stderr().trim()}`);
  const wrong = sendIcecast({ port, password: 'nope', amplitude: 0.1, seconds: 2, codec: 'mp3' });
  t.teardown(() => wrong.stop());
  t.not(await wrong.done, 0, 'a wrong password is refused');
  t.match(wrong.stderr(), /401|Unauthorized/);

  t.equal(await source.done, 0, `the source sent its audio: ${source.stderr()}`);
  await new Promise((resolve) => setTimeout(resolve, 700));
  const stats = receiver.stats(1.0, 0.5);
  t.ok(stats.packets > 3000, `RTP packets arrived (${stats.packets})`);
  const expected = sineRmsDbfs(amplitude);
  for (const [channel, rms] of stats.rmsDbfs.entries()) {
    t.ok(Math.abs(rms - expected) < 0.5, `MP3: channel ${channel}: RMS ${rms.toFixed(2)} dBFS, sent ${expected.toFixed(2)} dBFS`);
  }

  // The source left: EOS, a clean exit, and a new child is ready for the next source.
  const next = await whenStation(engine, 'studio-ice', (s) => s.restarts >= 1 && s.pid !== null && s.pid !== live.pid && s.source === null, 'a new child for the next source');
  t.equal(next.last_error, null, 'a clean end, not a failure');
  t.ok(engine.logs.some((l) => l.event === 'exit' && l.station_id === 'studio-ice' && l.exit_code === 0), 'the child ended with exit 0 at the end of the source');

  receiver.reset();
  const ogg = sendIcecast({ port, password, amplitude: 0.25, seconds: 4, codec: 'ogg', mount: '/ogg' });
  t.teardown(() => ogg.stop());
  t.equal(await ogg.done, 0, `the Ogg source sent its audio: ${ogg.stderr()}`);
  // Played out: the bridge holds what came early (a page is a second), plays it all, and the
  // child ends at its EOS; the next child waits for the next source.
  await whenStation(engine, 'studio-ice', (s) => s.pid !== null && s.pid !== next.pid && s.source === null, 'the Ogg source played out');
  await new Promise((resolve) => setTimeout(resolve, 300));
  // The level of the audio window: before the first page and after the last the output sends
  // digital silence, which a fixed window from the source's start would average in.
  const oggStats = receiver.audioStats();
  t.ok(oggStats.packets > 2000, `RTP packets arrived (${oggStats.packets})`);
  t.equal(oggStats.dropouts, 0, `no silent 10 ms block inside the audio window (${oggStats.dropouts})`);
  // ffmpeg's Ogg muxer sends one page per second of audio (page_duration 1 s): 1 s bursts, which
  // the bridge holds (the harbor's pipe waits while its FIFO is full) and plays whole.
  t.ok(oggStats.audioSeconds >= 3.5, `Ogg: ${oggStats.audioSeconds.toFixed(2)} s of audio came out of 4 s sent (>= 3.5)`);
  for (const [channel, rms] of oggStats.rmsDbfs.entries()) {
    t.ok(Math.abs(rms - sineRmsDbfs(0.25)) < 0.5, `Ogg: channel ${channel}: RMS ${rms.toFixed(2)} dBFS, sent ${sineRmsDbfs(0.25).toFixed(2)} dBFS`);
  }

  const logs = await api(dashboardOf(engine), 'GET', '/api/stations/studio-ice/logs?lines=10000');
  t.match(logs.text, 'source connected from 127.0.0.1', 'the station log tells the source story');
  t.match(logs.text, 'refused (403): a source is already connected');
  t.match(logs.text, 'refused (401): wrong credentials');
  const everything = `${logs.text}\n${engine.logs.map((l) => JSON.stringify(l)).join('\n')}\n${engine.stderr.join('\n')}`;
  t.notMatch(everything, password, 'the password is in no log');
});
