/** configureFailPoint state (failCommand). (Owned by the server work; stub.) */
export class FailPointRegistry {}
