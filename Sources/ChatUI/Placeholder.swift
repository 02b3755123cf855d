// ChatUI
