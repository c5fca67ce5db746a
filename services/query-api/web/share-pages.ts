import type { PublicationRead } from '../../../lib/app/published';
import { formatDuration, SHARE_PATH, type PublishedRender } from '../../../lib/domain/publication';
import { indexable } from '../../../lib/domain/publication-access';
import type { ProjectPartner } from '../../../lib/domain/project';
import { formatTimestamp, html, layout, type Html } from './html';

/**
 * The share page of a publication (issue 21), a pure function of what was read: the player with
 * its captions track, title and duration, Open Graph and Twitter card tags, the partner's
 * round-trip tags (SPEC Events 2), and `noindex` for all but public pages. Every value lands in an
 * `html` template, so titles and names are escaped in text and in attributes alike.
 */

export type SharePageInput = {
  readonly publication: PublicationRead;
  /** The page's absolute URL (`og:url`), and those of its media and captions routes (`og:video`, `og:audio`). */
  readonly urls: { readonly page: string; readonly media: string; readonly captions: string };
  /** Where the project came from, when it came through a partner's link. */
  readonly partner: ProjectPartner | null;
};

/** While the first render runs, the page looks again by itself (no script: a meta refresh). */
export const PROCESSING_REFRESH_SECONDS = 5;

export function sharePage(input: SharePageInput): Html {
  const { doc, state } = input.publication;
  const head = html`${robots(doc.started.access_level)}${partnerTags(input.partner)}`;
  if (doc.render === null) {
    return state === 'failed'
      ? layout(
          'Publishing failed',
          html`<h1>Publishing failed</h1>
            <p>This could not be published. Its publisher can publish it again.</p>`,
          head,
        )
      : layout(
          'Being published',
          html`<h1>Being published</h1>
            <p>This is being published. The page will show it as soon as it is ready.</p>`,
          html`${head}<meta http-equiv="refresh" content="${PROCESSING_REFRESH_SECONDS}" />`,
        );
  }
  const r = doc.render;
  const video = doc.started.media_type === 'Video';
  // The player's sources are relative: whatever host name the page was reached by, they are its origin's ('self' in the CSP).
  const local = { media: `${SHARE_PATH}/${doc.slug}/media`, captions: `${SHARE_PATH}/${doc.slug}/captions.vtt` };
  return layout(r.title, html`${player(r, video, local)}${details(input.publication, r)}`, html`${head}${openGraph(r, video, input.urls)}`);
}

const robots = (level: PublicationRead['doc']['started']['access_level']): Html | string =>
  indexable(level) ? '' : html`<meta name="robots" content="noindex" />`;

const partnerTags = (partner: ProjectPartner | null): Html | string =>
  partner
    ? html`<meta property="service:partner" content="${partner.partner_drive_id}" />${
          partner.source_id !== null ? html`<meta property="service:source" content="${partner.source_id}" />` : ''
        }`
    : '';

function player(r: PublishedRender, video: boolean, urls: { readonly media: string; readonly captions: string }): Html {
  const track = html`<track kind="captions" src="${urls.captions}" srclang="en" label="English" default />`;
  return video
    ? html`<video
        id="player"
        controls
        playsinline
        preload="metadata"
        src="${urls.media}"
        style="width:100%;height:auto;max-height:70vh;background:#000"
        ${r.width && r.height ? html`width="${r.width}" height="${r.height}"` : ''}
      >
        ${track}
      </video>`
    : html`<audio id="player" controls preload="metadata" src="${urls.media}" style="width:100%">${track}</audio>`;
}

function details({ doc }: PublicationRead, r: PublishedRender): Html {
  const by = `${doc.started.published_by.first_name} ${doc.started.published_by.last_name}`.trim();
  return html`<h1>${r.title}</h1>
    <p class="muted">
      <span id="duration">${formatDuration(r.duration_seconds)}</span> · published
      ${formatTimestamp(doc.published_at)}${by ? ` by ${by}` : ''}
    </p>`;
}

function openGraph(r: PublishedRender, video: boolean, urls: SharePageInput['urls']): Html {
  const description = `${video ? 'Video' : 'Audio'} · ${formatDuration(r.duration_seconds)}`;
  const media = video
    ? html`<meta property="og:video" content="${urls.media}" />
        <meta property="og:video:type" content="${r.content_type}" />
        ${
          r.width && r.height
            ? html`<meta property="og:video:width" content="${r.width}" /><meta property="og:video:height" content="${r.height}" />`
            : ''
        }`
    : html`<meta property="og:audio" content="${urls.media}" /><meta property="og:audio:type" content="${r.content_type}" />`;
  return html`<meta property="og:title" content="${r.title}" />
    <meta property="og:type" content="${video ? 'video.other' : 'music.song'}" />
    <meta property="og:url" content="${urls.page}" />
    <meta property="og:description" content="${description}" />
    ${media}
    <meta name="twitter:card" content="summary" />
    <meta name="twitter:title" content="${r.title}" />
    <meta name="twitter:description" content="${description}" />`;
}
