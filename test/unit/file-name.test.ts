import assert from 'node:assert/strict';
import { asciiFallback, fileStem, safeFileName } from '../../lib/domain/file-name';

describe('file names made from users’ names (lib/domain/file-name.ts)', () => {
  it('keeps a readable name whole: no separators, controls, format characters or lone surrogates', () => {
    assert.equal(fileStem('Q1/Q2 review', 'x'), 'Q1 Q2 review');
    assert.equal(fileStem('a\\b:c*d?e"f<g>h|i', 'x'), 'a b c d e f g h i');
    assert.equal(fileStem('evil_\u202Eexe', 'x'), 'evil_ exe');
    assert.equal(fileStem('sur\ud800rogate \udc00end', 'x'), 'sur rogate end');
    assert.equal(fileStem('line\nbreak\ttab', 'x'), 'line break tab');
    assert.equal(fileStem('🎬 Café', 'x'), '🎬 Café', 'a surrogate pair is a character, kept');
    assert.equal(fileStem('...hidden', 'x'), 'hidden');
    assert.equal(fileStem('  \u0000 / ', 'render'), 'render');
    assert.equal(fileStem('x'.repeat(300), 'f').length, 120);
    // Every name it makes can be encoded (encodeURIComponent throws on a lone surrogate).
    for (const name of ['\ud800', 'a\udfff', '\udc00\ud800']) encodeURIComponent(fileStem(name, 'f'));
  });

  it('keeps an extension when making a whole file name safe', () => {
    assert.equal(safeFileName('Q1/Q2 review.mp4', 'd'), 'Q1 Q2 review.mp4');
    assert.equal(safeFileName('../../etc.m4a', 'd'), 'etc.m4a');
    assert.equal(safeFileName('.mp4', 'download'), 'download.mp4');
    assert.equal(safeFileName('no extension', 'd'), 'no extension');
  });

  it('gives clients without RFC 6266 plain ASCII', () => {
    assert.equal(asciiFallback('Café – intro'), 'Cafe _ intro');
  });
});
