import assert from 'node:assert/strict';
import { accessOf, downloadFilename, indexable, publishTypeOf, type Viewer } from '../../lib/domain/publication-access';
import type { AccessLevel } from '../../lib/domain/tenancy';

describe('publication access (pure)', () => {
  const publication = (access_level: AccessLevel) => ({ access_level, drive_id: 'd1', published_by: { user_id: 'u1' } });
  const viewers: Record<string, Viewer | null> = {
    anonymous: null,
    publisher: { driveId: 'd1', userId: 'u1' },
    colleague: { driveId: 'd1', userId: 'u2' },
    stranger: { driveId: 'd2', userId: 'u3' },
    // A user id is a drive's: the same id under another drive is not the publisher.
    sameIdElsewhere: { driveId: 'd2', userId: 'u1' },
  };

  it('allows public and unlisted to anyone, drive to its members, private to its publisher; asks the anonymous to sign in', () => {
    const expected: Record<AccessLevel, Record<string, string>> = {
      public: { anonymous: 'allowed', publisher: 'allowed', colleague: 'allowed', stranger: 'allowed', sameIdElsewhere: 'allowed' },
      unlisted: { anonymous: 'allowed', publisher: 'allowed', colleague: 'allowed', stranger: 'allowed', sameIdElsewhere: 'allowed' },
      drive: { anonymous: 'sign_in', publisher: 'allowed', colleague: 'allowed', stranger: 'forbidden', sameIdElsewhere: 'forbidden' },
      private: { anonymous: 'sign_in', publisher: 'allowed', colleague: 'forbidden', stranger: 'forbidden', sameIdElsewhere: 'forbidden' },
    };
    for (const [level, row] of Object.entries(expected)) {
      for (const [name, verdict] of Object.entries(row)) {
        assert.equal(accessOf(publication(level as AccessLevel), viewers[name]), verdict, `${name} on a ${level} page`);
      }
    }
  });

  it('lets only public pages be indexed', () => {
    assert.deepEqual((['public', 'unlisted', 'drive', 'private'] as const).map(indexable), [true, false, false, false]);
  });

  it('names publish_type from the media type', () => {
    assert.equal(publishTypeOf('Video'), 'video');
    assert.equal(publishTypeOf('Audio'), 'audio');
  });

  it('makes a safe download file name from the title, with the render extension', () => {
    assert.equal(downloadFilename('Interview: part 1/2', 'Video'), 'Interview part 1 2.mp4');
    assert.equal(downloadFilename('Café «déjà vu»', 'Audio'), 'Café «déjà vu».m4a');
    assert.equal(downloadFilename('../../etc/passwd', 'Video'), 'etc passwd.mp4');
    assert.equal(downloadFilename('a\u0000b\r\nc\t"d"<e>|f?*', 'Video'), 'a b c d e f.mp4');
    assert.equal(downloadFilename(' \u0007 ', 'Video'), 'publication.mp4');
    assert.equal(downloadFilename('x'.repeat(500), 'Audio'), `${'x'.repeat(120)}.m4a`);
  });
});
