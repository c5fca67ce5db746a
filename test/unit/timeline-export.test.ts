import assert from 'node:assert/strict';
import { cutRanges, type Clip, type Marker } from '../../lib/domain/edl';
import { rateOf, renderTimeline, stableFileNames, type Rate, type TimelineInput, type TimelineMedia } from '../../lib/domain/timeline';
import { readCmx3600, readFcpxml, readOtio, xmllintWellFormed, type ReadClip } from '../fixtures/timeline-readers';

/**
 * Issue 22 item 6: the three timeline formats written from a composition, each read back by a
 * parser and compared with the composition's clip list to the frame, after cuts.
 */
describe('timeline export formats', () => {
  const media = (ref: string, file: string, has_video: boolean, rate: Rate | null = null): TimelineMedia => ({
    ref,
    file,
    duration: 60,
    has_video,
    has_audio: true,
    rate,
  });
  const PAL = { num: 25, den: 1 };
  const CAM = media('Interview/cam 1.mp4', 'Interview_cam_1.mp4', true, PAL);
  const VO = media('voice over', 'voice_over.m4a', false);
  // Cuts at times that are not on frames: the export rounds each point to the nearest frame.
  const clips: Clip[] = cutRanges(
    [
      { media: CAM.ref, in: 0, out: 20 },
      { media: VO.ref, in: 2.5, out: 10 },
      { media: CAM.ref, in: 30, out: 40 },
    ],
    [
      { from: 1.013, to: 3.777 },
      { from: 12.345, to: 12.9 },
      { from: 21.02, to: 22.5 },
    ],
  );
  const markers: Marker[] = [
    { time: 0.5, label: 'Intro <"&"> ' },
    { time: 14, label: 'Voice' },
  ];
  const input = (over: Partial<TimelineInput> = {}): TimelineInput => ({
    name: 'Café & "Friends" <cut>',
    width: 1920,
    height: 1080,
    clips,
    markers,
    media: new Map([CAM, VO].map((m) => [m.ref, m])),
    sequences: new Map(),
    ...over,
  });

  /** The clip list in frames at `fps`, as every format must say it. */
  /** Each clip's record edges are its edges in composition time rounded to frames; its source starts at its in point's frame. */
  function expected(list: readonly Clip[], fps: number, files = new Map([CAM, VO].map((m) => [m.ref, m.file]))): ReadClip[] {
    let time = 0;
    return list.map((c) => {
      const [recordIn, recordOut] = [Math.round(time * fps), Math.round((time + c.out - c.in) * fps)];
      time += c.out - c.in;
      const sourceIn = Math.round(c.in * fps);
      return { lane: 0, file: files.get(c.media)!, sourceIn, sourceOut: sourceIn + recordOut - recordIn, recordIn, recordOut };
    });
  }

  it('has cuts that fall between frames (so the test below says something)', () => {
    assert.equal(clips.length, 6);
    assert.ok(clips.some((c) => Math.abs(c.in * 25 - Math.round(c.in * 25)) > 0.01));
  });

  it('FCPXML 1.10: well-formed, assets by stable file name, asset-clips at the clip points to the frame, markers', () => {
    const file = renderTimeline('fcpxml', input());
    assert.equal(file.extension, '.fcpxml');
    const lint = xmllintWellFormed(file.text);
    if (lint === null) console.warn('      xmllint is not installed: well-formedness not checked (apt-get install libxml2-utils)');
    else assert.ok(lint.ok, lint.stderr);
    const read = readFcpxml(file.text);
    assert.deepEqual(read.clips, expected(clips, 25));
    assert.deepEqual(read.markers, [
      { frame: 13, label: 'Intro <"&"> ' },
      { frame: 350, label: 'Voice' },
    ]);
    const project = read.doc.fcpxml.library.event.project;
    assert.equal(project.name, 'Café & "Friends" <cut>');
    const assets = read.doc.fcpxml.resources.asset;
    assert.deepEqual(
      assets.map((a: Record<string, string>) => [a.name, a.hasVideo, a.hasAudio]),
      [
        ['Interview_cam_1.mp4', '1', '1'],
        ['voice_over.m4a', '0', '1'],
      ],
    );
  });

  it('CMX 3600: one event per clip on V, A1 and A2, source and record timecodes to the frame, reels from file names', () => {
    const file = renderTimeline('edl', input());
    const read = readCmx3600(file.text, 25);
    assert.deepEqual(read.clips, expected(clips, 25));
    assert.deepEqual(
      read.events.map((e) => [e.reel, e.channels]),
      clips.map((c) => (c.media === CAM.ref ? ['INTERVIE', 'AA/V'] : ['VOICEOVE', 'AA'])),
    );
    assert.deepEqual(read.markers, [
      { frame: 13, label: 'Intro <"&"> ' },
      { frame: 350, label: 'Voice' },
    ]);
    assert.equal(read.title, 'Caf_ & "Friends" <cut>', 'printable ASCII only');
  });

  it('OTIO: Timeline.1/Stack.1/Track.1 with Clip.2 and ExternalReference.1, a gap where a clip has no video', () => {
    const file = renderTimeline('otio', input());
    const audio = readOtio(file.text, 'Audio');
    assert.deepEqual(audio.clips, expected(clips, 25));
    const video = readOtio(file.text, 'Video');
    assert.deepEqual(
      video.clips,
      expected(clips, 25).filter((c) => c.file !== VO.file),
      'the voice-over is a gap on V1 and the camera clips keep their record times',
    );
    assert.deepEqual(audio.markers, [
      { frame: 13, label: 'Intro <"&"> ' },
      { frame: 350, label: 'Voice' },
    ]);
    assert.equal(audio.doc.name, 'Café & "Friends" <cut>');
  });

  it('writes source points at the media frame rate (29.97: 30000/1001) and the timeline at that rate', () => {
    const NTSC = { num: 30000, den: 1001 };
    const cam = { ...CAM, rate: NTSC };
    const only = clips.filter((c) => c.media === CAM.ref);
    const given = input({ clips: only, markers: [], media: new Map([[cam.ref, cam]]) });
    const fps = 30000 / 1001;
    const want = expected(only, fps);
    assert.deepEqual(readFcpxml(renderTimeline('fcpxml', given).text).clips, want);
    assert.deepEqual(readCmx3600(renderTimeline('edl', given).text, 30).clips, want, 'NDF counts 30 nominal frames a second');
    assert.deepEqual(readOtio(renderTimeline('otio', given).text, 'Video').clips, want);
  });

  it('uses 25 fps when no media of the composition has a known rate', () => {
    const vo = input({ clips: clips.filter((c) => c.media === VO.ref), markers: [] });
    const read = readFcpxml(renderTimeline('fcpxml', vo).text);
    assert.equal(read.doc.fcpxml.resources.format.frameDuration, '1/25s');
    assert.deepEqual(read.clips, expected(vo.clips, 25));
  });

  it('exports an empty composition as a valid empty timeline in each format', () => {
    const empty = input({ clips: [], markers: [] });
    assert.deepEqual(readFcpxml(renderTimeline('fcpxml', empty).text).clips, []);
    assert.deepEqual(readCmx3600(renderTimeline('edl', empty).text, 25).clips, []);
    assert.deepEqual(readOtio(renderTimeline('otio', empty).text, 'Audio').clips, []);
  });

  it('names files stably: readable ASCII, an extension, no collisions (case-insensitive), no hidden files', () => {
    const names = stableFileNames([
      { ref: 'talk.wav', type: 'audio' },
      { ref: 'Talk.WAV', type: 'audio' },
      { ref: 'Entrevue été/caméra 1.MOV', type: 'video' },
      { ref: 'constructor', type: 'video' },
      { ref: '../../etc/passwd', type: 'audio' },
      { ref: '日本語', type: 'audio' },
    ]);
    assert.deepEqual(
      [...names.values()],
      ['talk.wav', 'Talk-2.wav', 'Entrevue_ete_camera_1.mov', 'constructor.mp4', 'etc_passwd.m4a', 'media.m4a'],
    );
  });

  it('reads probed frame rates in the forms ffprobe and people write them', () => {
    assert.deepEqual(rateOf('30000/1001'), { num: 30000, den: 1001 });
    assert.deepEqual(rateOf(29.97), { num: 30000, den: 1001 });
    assert.deepEqual(rateOf('23.976'), { num: 24000, den: 1001 });
    assert.deepEqual(rateOf(25), { num: 25, den: 1 });
    assert.equal(rateOf('0/0'), null);
    assert.equal(rateOf(-1), null);
    assert.equal(rateOf('fast'), null);
  });
});

/**
 * Issue 22 item 6 with multitrack sequences: a podcast sequence of two recordings (Ben's starts
 * 1.01 s in, not on a frame, and is shorter than the clip that plays it) between plain clips, and
 * each format read back lane by lane to the frame.
 */
describe('timeline export formats: multitrack sequences', () => {
  const audio = (ref: string, duration: number): TimelineMedia => ({
    ref,
    file: `${ref}.wav`,
    duration,
    has_video: false,
    has_audio: true,
    rate: null,
  });
  const ANA = audio('ana', 60);
  const BEN = audio('ben', 8);
  const INTRO = audio('intro', 10);
  const podcast = (over: Partial<TimelineInput> = {}): TimelineInput => ({
    name: 'Episode 1',
    width: 1920,
    height: 1080,
    clips: [
      { media: 'intro', in: 0, out: 2 },
      { media: 'pod', in: 0.5, out: 6 },
      { media: 'pod', in: 8, out: 12 }, // Ben's 8 s ended at 9.01 s
    ],
    markers: [{ time: 3, label: 'Ben joins' }],
    media: new Map([ANA, BEN, INTRO].map((m) => [m.ref, m])),
    sequences: new Map([
      [
        'pod',
        [
          { media: 'ana', offset: 0 },
          { media: 'ben', offset: 1.01 },
        ],
      ],
    ]),
    ...over,
  });
  /**
   * Worked out by hand at 25 fps: record frames 0–50 the intro, 50–188 the first sequence clip
   * (composition time 2–7.5 s), 188–288 the second (7.5–11.5 s); each edge is a composition time
   * rounded to the nearest frame.
   */
  const WANT: ReadClip[] = [
    { lane: 0, file: 'intro.wav', sourceIn: 0, sourceOut: 50, recordIn: 0, recordOut: 50 },
    { lane: 0, file: 'ana.wav', sourceIn: 13, sourceOut: 151, recordIn: 50, recordOut: 188 },
    // Ben from sequence time 1.01 s: composition time 2.51 s, frame 63 (62.75), his own frame 0.
    { lane: 1, file: 'ben.wav', sourceIn: 0, sourceOut: 125, recordIn: 63, recordOut: 188 },
    { lane: 0, file: 'ana.wav', sourceIn: 200, sourceOut: 300, recordIn: 188, recordOut: 288 },
    // From 8 s (his 6.99 s: frame 175) to his end at 9.01 s (composition 8.51 s: frame 213): 25 frames.
    { lane: 1, file: 'ben.wav', sourceIn: 175, sourceOut: 200, recordIn: 188, recordOut: 213 },
  ];

  it('FCPXML: lane 0 in the spine, the second track connected below it in its parent’s time, each asset once', () => {
    const file = renderTimeline('fcpxml', podcast());
    const lint = xmllintWellFormed(file.text);
    if (lint !== null) assert.ok(lint.ok, lint.stderr);
    const read = readFcpxml(file.text);
    assert.deepEqual(read.clips, WANT);
    assert.deepEqual(read.markers, [{ frame: 75, label: 'Ben joins' }]);
    const assets = read.doc.fcpxml.resources.asset.map((a: Record<string, string>) => a.name);
    assert.deepEqual(assets, ['intro.wav', 'ana.wav', 'ben.wav']);
    const spine = read.doc.fcpxml.library.event.project.sequence.spine['asset-clip'];
    const connected = spine[1]['asset-clip'];
    assert.equal(connected.lane, '-1');
    assert.equal(connected.offset, '26/25s', 'Ana’s source frame 13 + 13 frames: the parent’s time, not the timeline’s');
  });

  it('FCPXML: a gap in the spine where the first track plays nothing, holding the other track', () => {
    const late = podcast({
      clips: [{ media: 'pod', in: 0, out: 4 }],
      markers: [],
      sequences: new Map([
        [
          'pod',
          [
            { media: 'ana', offset: 2 },
            { media: 'ben', offset: 0 },
          ],
        ],
      ]),
    });
    const read = readFcpxml(renderTimeline('fcpxml', late).text);
    assert.deepEqual(read.clips, [
      { lane: 1, file: 'ben.wav', sourceIn: 0, sourceOut: 100, recordIn: 0, recordOut: 100 },
      { lane: 0, file: 'ana.wav', sourceIn: 0, sourceOut: 50, recordIn: 50, recordOut: 100 },
    ]);
    const gap = read.doc.fcpxml.library.event.project.sequence.spine.gap;
    assert.equal(gap.duration, '50/25s');
    assert.equal(gap['asset-clip'].name, 'ben.wav');
  });

  it('OTIO: an audio track per lane, gaps where the lane is silent, every track as long as the timeline', () => {
    const read = readOtio(renderTimeline('otio', podcast()).text, 'Audio');
    assert.deepEqual(read.clips, WANT);
    assert.equal(read.length, 288);
    assert.deepEqual(
      read.doc.tracks.children.map((t: { name: string }) => t.name),
      ['A1', 'A2'],
    );
  });

  it('OTIO: video lanes stacked with the first track’s picture on top', () => {
    const cam = (ref: string): TimelineMedia => ({ ...audio(ref, 60), file: `${ref}.mp4`, has_video: true });
    const twoCams = podcast({
      clips: [{ media: 'pod', in: 0, out: 2 }],
      markers: [],
      media: new Map([cam('cam1'), cam('cam2')].map((m) => [m.ref, m])),
      sequences: new Map([
        [
          'pod',
          [
            { media: 'cam1', offset: 0 },
            { media: 'cam2', offset: 0 },
          ],
        ],
      ]),
    });
    const read = readOtio(renderTimeline('otio', twoCams).text, 'Video');
    assert.deepEqual(
      read.doc.tracks.children.map((t: { name: string }) => t.name),
      ['V2', 'V1', 'A1', 'A2'],
    );
    assert.deepEqual(
      read.clips.map((c) => [c.lane, c.file]),
      [
        [0, 'cam1.mp4'],
        [1, 'cam2.mp4'],
      ],
    );
  });

  it('CMX 3600: two sounding lanes on A and A2, an event alone at its time on both channels (AA)', () => {
    const read = readCmx3600(renderTimeline('edl', podcast()).text, 25);
    assert.deepEqual(read.clips, WANT);
    assert.deepEqual(
      read.events.map((e) => [e.reel, e.channels]),
      [
        ['INTRO', 'AA'],
        ['ANA', 'A'],
        ['BEN', 'A2'],
        ['ANA', 'A'],
        ['BEN', 'A2'],
      ],
    );
    assert.deepEqual(read.markers, [{ frame: 75, label: 'Ben joins' }], 'once, though two events are under it');
  });

  it('CMX 3600: three tracks that never sound three at once fit on A and A2', () => {
    const relay = podcast({
      clips: [{ media: 'pod', in: 0, out: 30 }],
      markers: [],
      sequences: new Map([
        [
          'pod',
          [
            { media: 'ana', offset: 0 },
            { media: 'ben', offset: 0 },
            { media: 'intro', offset: 20 }, // after Ben's 8 s
          ],
        ],
      ]),
    });
    const read = readCmx3600(renderTimeline('edl', relay).text, 25);
    assert.deepEqual(
      read.events.map((e, i) => [e.reel, e.channels, read.clips[i].recordIn, read.clips[i].recordOut]),
      [
        ['ANA', 'A', 0, 750],
        ['BEN', 'A2', 0, 200],
        ['INTRO', 'A2', 500, 750],
      ],
    );
  });

  it('CMX 3600: refuses a composition with three sounding at once or two pictures, naming the formats that hold them', () => {
    const three = podcast({
      media: new Map([ANA, BEN, INTRO].map((m) => [m.ref, m])),
      sequences: new Map([
        [
          'pod',
          [
            { media: 'ana', offset: 0 },
            { media: 'ben', offset: 0 },
            { media: 'intro', offset: 0 },
          ],
        ],
      ]),
    });
    assert.throws(
      () => renderTimeline('edl', three),
      (e: Error & { code?: string; status?: number }) =>
        e.code === 'invalid_input' &&
        e.status === 400 &&
        e.message === 'a CMX 3600 EDL holds two audio tracks; this composition sounds three at once at 00:00:02:00: export fcpxml or otio',
    );
    assert.equal(readFcpxml(renderTimeline('fcpxml', three).text).clips.filter((c) => c.lane === 2).length, 2);
    const cam = (ref: string): TimelineMedia => ({ ...audio(ref, 60), file: `${ref}.mp4`, has_video: true, has_audio: false });
    const twoPictures = podcast({
      clips: [{ media: 'pod', in: 0, out: 2 }],
      media: new Map([cam('cam1'), cam('cam2')].map((m) => [m.ref, m])),
      sequences: new Map([
        [
          'pod',
          [
            { media: 'cam1', offset: 0 },
            { media: 'cam2', offset: 0 },
          ],
        ],
      ]),
    });
    assert.throws(() => renderTimeline('edl', twoPictures), {
      code: 'invalid_input',
      message: 'a CMX 3600 EDL holds one video track; this composition needs 2: export fcpxml or otio',
    });
  });
});
