/**
 * Whether a request URL's path is `path`: `url.split('?')[0] === path`, without the array and
 * string that split makes for each request (middlewares that look at every heartbeat).
 */
export function isPathOf(url: string | undefined, path: string): boolean {
  return (
    url !== undefined &&
    url.startsWith(path) &&
    (url.length === path.length || url.charCodeAt(path.length) === 63) // '?'
  );
}
