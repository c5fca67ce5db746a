import type { Principal } from '../../../lib/app/tenancy';
import type { Word } from '../../../lib/domain/edl';
import type { ProjectMediaEntry } from '../../../lib/read-models/projects';
import type { CompositionView, ProjectView } from '../project-view';
import { formatSeconds, formatTimestamp, html, layout, type Html } from './html';
import { paragraphs } from '../../../lib/domain/transcript/paragraphs';

/** The pages themselves: pure functions from what was read to `Html`. */

/** A transcript longer than this is cut on the page (an hour of speech is about 9,000 words). */
export const MAX_PAGE_WORDS = 50_000;

const signOut = html`<form class="inline" method="post" action="/logout"><button type="submit">Sign out</button></form>`;

export function loginPage(input: { next: string; message?: string }): Html {
  return layout(
    'Sign in',
    html`<h1>Sign in</h1>
      <p class="muted">Sign in with an API token of your drive. The token is kept in a cookie for 8 hours; revoking it ends the session.</p>
      ${input.message ? html`<p class="error" role="alert">${input.message}</p>` : ''}
      <form method="post" action="/login">
        <input type="hidden" name="next" value="${input.next}" />
        <label>API token <input type="password" name="token" autocomplete="off" required autofocus /></label>
        <button type="submit">Sign in</button>
      </form>`,
  );
}

export const signedInPage = (who: Principal): Html =>
  layout(
    'Signed in',
    html`<h1>Signed in</h1>
      <p>You are signed in to the drive <strong>${who.driveName}</strong>. Open a project through its project URL.</p>
      ${signOut}`,
  );

export const errorPage = (status: number, title: string, message: string): Html =>
  layout(
    title,
    html`<h1>${title}</h1>
      <p>${message}</p>
      <p class="muted">HTTP ${status}</p>`,
  );

export type ProjectPageInput = {
  readonly view: ProjectView;
  /** The compositions to show, the focused one (from the URL's short id) first. */
  readonly compositions: readonly { readonly composition: CompositionView; readonly words: readonly Word[] }[];
  readonly focusId: string | null;
  readonly jobs: readonly Record<string, unknown>[];
};

export function projectPage(input: ProjectPageInput): Html {
  const { project } = input.view;
  return layout(
    project.name,
    html`<p>${signOut}</p>
      <h1>${project.name}</h1>
      ${project.folder_path !== null ? html`<p class="muted">Folder: ${project.folder_path}</p>` : ''}
      <p class="muted">Project ${project.id} · updated ${formatTimestamp(project.updated_at)}</p>
      <h2>Media</h2>
      ${project.media.length ? mediaTable(project.media) : html`<p class="muted">No media yet.</p>`}
      <h2>Compositions</h2>
      ${input.compositions.map(({ composition, words }) => compositionSection(composition, words, composition.id === input.focusId))}
      <h2>Recent jobs</h2>
      ${input.jobs.length ? jobsTable(input.jobs) : html`<p class="muted">No jobs.</p>`}`,
  );
}

const mediaTable = (media: readonly ProjectMediaEntry[]): Html =>
  html`<table>
    <thead>
      <tr>
        <th>Media</th>
        <th>Type</th>
        <th>Duration</th>
        <th>Transcript</th>
      </tr>
    </thead>
    <tbody>
      ${media.map(
        (m) =>
          html`<tr>
            <td>${m.ref}${m.tracks ? html`<br /><span class="muted">tracks: ${m.tracks.map((t) => t.media).join(', ')}</span>` : ''}</td>
            <td>${m.type}</td>
            <td>${m.duration === null ? '' : formatSeconds(m.duration)}</td>
            <td>${m.transcript_key ? `yes${m.language ? ` (${m.language})` : ''}` : ''}</td>
          </tr> `,
      )}
    </tbody>
  </table>`;

function compositionSection(c: CompositionView, words: readonly Word[], focus: boolean): Html {
  const shown = words.slice(0, MAX_PAGE_WORDS);
  return html`<section class="composition${focus ? ' focus' : ''}" id="c-${c.short_id}">
    <h3>${c.name}</h3>
    <p class="muted">
      ${c.media_type} · ${formatSeconds(c.duration)} · ${c.clips.length} clip${c.clips.length === 1 ? '' : 's'} · ${c.short_id}
    </p>
    ${
      shown.length
        ? paragraphs(shown).map(
            (p) =>
              html`<p>
                <span class="tc">${formatSeconds(p.start)}</span
                >${p.speakerLabel !== null ? html`<span class="speaker">${p.speakerLabel}:</span> ` : ''}${p.text}
              </p> `,
          )
        : html`<p class="muted">No transcript.</p>`
    }
    ${words.length > shown.length ? html`<p class="muted">The transcript goes on (${words.length - shown.length} more words): export it for the rest.</p>` : ''}
  </section> `;
}

const jobsTable = (jobs: readonly Record<string, unknown>[]): Html =>
  html`<table>
    <thead>
      <tr>
        <th>Job</th>
        <th>Type</th>
        <th>State</th>
        <th>Created</th>
        <th>Result</th>
      </tr>
    </thead>
    <tbody>
      ${jobs.map(
        (j) =>
          html`<tr>
            <td>${String(j.job_id)}</td>
            <td>${String(j.job_type)}</td>
            <td>${stateOf(j)}</td>
            <td>${formatTimestamp(j.created_at)}</td>
            <td>${resultOf(j)}</td>
          </tr> `,
      )}
    </tbody>
  </table>`;

function stateOf(job: Record<string, unknown>): string {
  const progress = job.progress as { label?: unknown; percent?: unknown } | undefined;
  return job.job_state === 'running' && progress
    ? `running: ${String(progress.label)} (${String(progress.percent)}%)`
    : String(job.job_state);
}

const resultOf = (job: Record<string, unknown>): string =>
  job.job_state === 'stopped' ? String((job.result as { status?: unknown } | undefined)?.status ?? '') : '';
