pub mod scripted_conversation;
