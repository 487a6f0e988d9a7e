//! Recall receipts: the statements both stores run as they are.

statements! {
    /// A recall receipt. Binds: namespace, id.
    BY_ID = "SELECT body_json FROM recall_receipts WHERE namespace_id = ? AND id = ?";

    /// A recall receipt by its request id. Binds: namespace, request.
    BY_REQUEST = "SELECT body_json FROM recall_receipts WHERE namespace_id = ? AND request_id = ?";
}
