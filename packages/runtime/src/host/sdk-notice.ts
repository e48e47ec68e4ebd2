/**
 * The AWS SDK for JavaScript prints a ten-line Node-version notice (a process warning) in every
 * thread that loads it, when Node is older than the one its future releases need: with a coordinator
 * and a snapshot pool that is several times the same notice. The runtime says it once, in one line
 * of its own (only when it reaches AWS: an s3:// store or a queue; a file:// store never loads the
 * SDK's clients), and starts its threads with the SDK's switch for that notice set.
 */

/** The Node major the SDK's releases after the first week of January 2027 require (its notice's threshold). */
const SDK_NODE_MAJOR = 22;
const SWITCH = 'AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED';

let said = false;

/**
 * The environment to start Ferry's threads with (the SDK's notice switched off), and the line to
 * log instead, once per process (undefined when there is nothing to say: no AWS in use, a newer
 * Node, the switch already set by the user, or the line already said).
 */
export function sdkNoticeOnce(
  env: NodeJS.ProcessEnv = process.env,
  version: string = process.version,
  usesAws = true,
): { readonly env: NodeJS.ProcessEnv; readonly line: string | undefined } {
  const threadEnv = { ...env, [SWITCH]: 'true' };
  const major = Number.parseInt(version.replace(/^v/, ''), 10);
  if (!usesAws || env[SWITCH] === 'true' || !(major < SDK_NODE_MAJOR) || said) {
    return { env: threadEnv, line: undefined };
  }
  said = true;
  return {
    env: threadEnv,
    line: `Node ${version} runs this Ferry, but AWS SDK for JavaScript releases published after the first week of January 2027 need Node ${SDK_NODE_MAJOR} or later: move to Node ${SDK_NODE_MAJOR} before updating Ferry's dependencies (set ${SWITCH}=true to silence this line).`,
  };
}
