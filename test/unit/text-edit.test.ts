import assert from 'node:assert/strict';
import type { Word } from '../../lib/domain/edl';
import { AppError } from '../../lib/domain/errors';
import { deletedWords, rangesOfWords, transcriptText, transcriptWords } from '../../lib/domain/text-edit';

const word = (text: string, start: number, end: number): Word => ({ text, start, end, confidence: 1, speaker: null });
const WORDS = [
  word('so', 0, 0.5),
  word('um', 1, 1.4),
  word('the', 2, 2.2),
  word('the', 2.5, 2.7),
  word('New York', 3, 4),
  word('price', 4.5, 5),
];
const deleted = (text: string) => {
  const out = deletedWords(WORDS, text);
  assert.ok(!(out instanceof AppError), out instanceof AppError ? out.message : '');
  return out;
};
const refusal = (text: string) => {
  const out = deletedWords(WORDS, text);
  assert.ok(out instanceof AppError, `expected a refusal for ${text}`);
  assert.equal(out.code, 'invalid_input');
  return out.message;
};

describe('edit by text', () => {
  it('shows the words with position ids, and their text one space apart', () => {
    assert.deepEqual(transcriptWords(WORDS.slice(0, 2)), [
      { id: 'w0', text: 'so', start: 0, end: 0.5, speaker: null, confidence: 1 },
      { id: 'w1', text: 'um', start: 1, end: 1.4, speaker: null, confidence: 1 },
    ]);
    assert.equal(transcriptText(WORDS), 'so um the the New York price');
  });
  it('finds the deleted words whatever the spacing', () => {
    assert.deepEqual(deleted('so um the the New York price'), []);
    assert.deepEqual(deleted(' so\n the  New York price '), [1, 3]);
    assert.deepEqual(deleted(''), [0, 1, 2, 3, 4, 5]);
  });
  it('keeps a word of several tokens while any of them stays', () => {
    assert.deepEqual(deleted('so York price'), [1, 2, 3]);
    assert.deepEqual(deleted('so price'), [1, 2, 3, 4]);
  });
  it('of repeated words, deletes the later one', () => assert.deepEqual(deleted('so um the New York price'), [3]));
  it('refuses the first word added, changed or moved, naming it and its place in the text', () => {
    assert.equal(
      refusal('so uh price'),
      'text: word 2 "uh" is not in the transcript (added or changed); editing by text only deletes words',
    );
    assert.equal(
      refusal('so Price'),
      'text: word 2 "Price" is not in the transcript (added or changed); editing by text only deletes words',
    );
    assert.equal(refusal('so price um'), 'text: word 3 "um" is out of order (moved or repeated); editing by text only deletes words');
    assert.equal(refusal('so the the the'), 'text: word 4 "the" is out of order (moved or repeated); editing by text only deletes words');
  });
  it('cuts a run of neighbouring deleted words as one range, pauses between them included', () => {
    assert.deepEqual(rangesOfWords(WORDS, [1, 2, 3, 5]), [
      { from: 1, to: 2.7 },
      { from: 4.5, to: 5 },
    ]);
    assert.deepEqual(rangesOfWords(WORDS, []), []);
  });
});
