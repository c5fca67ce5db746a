import { fileNames } from '../../../lib/app/import-link';
import type { Principal } from '../../../lib/app/tenancy';
import type { ImportLinkIssued } from '../../../lib/domain/import-link';
import { formatSeconds, formatTimestamp, html, layout, type Html } from './html';

/** The partner import page (`GET /import?nonce=…`) and its answers for links that cannot be used. */

export function importPage(input: { who: Principal; link: ImportLinkIssued['data'] }): Html {
  const { link } = input;
  const names = fileNames(link.files);
  const offsets = link.files.some((f) => f.start_offset !== null);
  return layout(
    'Import',
    html`<h1>Import files</h1>
      <p>
        A partner sent ${link.files.length === 1 ? 'a file' : `${link.files.length} files`} to edit. Importing makes a new project in your
        drive <strong>${input.who.driveName}</strong>${offsets ? ', with the files as the tracks of one multitrack sequence' : ''}.
      </p>
      <table>
        <thead>
          <tr>
            <th>File</th>
            <th>From</th>
            ${offsets ? html`<th>Starts at</th>` : ''}
          </tr>
        </thead>
        <tbody>
          ${link.files.map(
            (f, i) =>
              html`<tr>
                <td>${names[i]}</td>
                <td>${hostOf(f.uri)}</td>
                ${offsets ? html`<td>${formatSeconds(f.start_offset?.seconds ?? 0)}</td>` : ''}
              </tr> `,
          )}
        </tbody>
      </table>
      <form method="post" action="/import">
        <input type="hidden" name="nonce" value="${link.nonce}" />
        <p><button type="submit">Import</button></p>
      </form>
      <p class="muted">The link can be used once, until ${formatTimestamp(link.expires_at)}.</p>`,
  );
}

/** Why a link cannot be used: the same page whether it was used (by anyone) or it expired, naming which. */
export const linkGoneMessage = (state: 'used' | 'expired'): string =>
  state === 'used'
    ? 'This import link was already used. Ask the partner for a new link to import the files again.'
    : 'This import link has expired (links are valid for 3 hours). Ask the partner for a new link.';

export const NO_SUCH_LINK = 'There is no import link at this address.';

const hostOf = (uri: string): string => {
  try {
    return new URL(uri).host;
  } catch {
    return '';
  }
};
