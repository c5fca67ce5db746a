import { assertNever } from './errors';
import type { PublishMediaType, Publisher } from './publication';
import type { AccessLevel } from './tenancy';

/**
 * Who may see a publication (issue 21), the same rule for the share page and GET
 * /published_projects/{slug}: `public` and `unlisted` anyone with the link (the slug is 96 random
 * bits, so the link is the secret), `drive` the members of the publication's drive, `private`
 * the publisher only. A viewer is a token's principal (the API) or a web session's (the page).
 */

export type Viewer = { readonly driveId: string; readonly userId: string };

/** What a viewer may do: watch it, sign in first (no viewer yet), or nothing. */
export type AccessVerdict = 'allowed' | 'sign_in' | 'forbidden';

export type Guarded = {
  readonly access_level: AccessLevel;
  readonly drive_id: string;
  readonly published_by: Pick<Publisher, 'user_id'>;
};

export function accessOf(publication: Guarded, viewer: Viewer | null): AccessVerdict {
  switch (publication.access_level) {
    case 'public':
    case 'unlisted':
      return 'allowed';
    case 'drive':
      if (viewer === null) return 'sign_in';
      return viewer.driveId === publication.drive_id ? 'allowed' : 'forbidden';
    case 'private':
      if (viewer === null) return 'sign_in';
      return viewer.driveId === publication.drive_id && viewer.userId === publication.published_by.user_id ? 'allowed' : 'forbidden';
    default:
      return assertNever(publication.access_level);
  }
}

/** Only `public` pages may be indexed by search engines; the others say `noindex`. */
export const indexable = (level: AccessLevel): boolean => level === 'public';

/** SPEC `publish_type`. */
export const publishTypeOf = (mediaType: PublishMediaType): 'video' | 'audio' => (mediaType === 'Video' ? 'video' : 'audio');

/**
 * The download's file name: the title with what no file system takes (path separators, control
 * characters, reserved punctuation) replaced, bounded, and the render's extension.
 */
export function downloadFilename(title: string, mediaType: PublishMediaType): string {
  const cleaned = title
    .replace(/[\p{Cc}/\\:*?"<>|]+/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/^[.\s]+/, '')
    .slice(0, 120)
    .trim();
  return `${cleaned || 'publication'}${mediaType === 'Video' ? '.mp4' : '.m4a'}`;
}
